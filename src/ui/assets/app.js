/* msgflow dashboard: hand-written, no build step. It uses only the JSON API.
 * Every text the pages show goes through text nodes (h() below never parses
 * HTML), so a flow named <script> renders as text. Live updates come from one
 * EventSource on /api/events: the pages never poll. */
/* global document, window, fetch, EventSource, sessionStorage, uPlot, location, URLSearchParams */
'use strict';

(function () {
  const main = document.getElementById('main');
  const tokenInput = document.getElementById('token');
  tokenInput.value = sessionStorage.getItem('msgflow.token') || '';
  tokenInput.addEventListener('change', () => sessionStorage.setItem('msgflow.token', tokenInput.value));

  // ---- DOM and formatting helpers ----------------------------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'class') el.className = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof window.Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const fmtTime = (ms) => (ms ? new Date(ms).toLocaleString() : '');
  function fmtDuration(ms) {
    if (ms === undefined || ms === null) return '';
    const s = Math.round(ms / 1000);
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm' + String(s % 60).padStart(2, '0') + 's';
    return Math.floor(m / 60) + 'h' + String(m % 60).padStart(2, '0') + 'm';
  }
  const statusBadge = (s) => h('span', { class: 'status ' + s, 'data-status': s }, s);
  function bar(done, failed, total) {
    if (!total) return h('span', { class: 'muted' }, done + (failed ? ' (' + failed + ' failed)' : ''));
    const pct = (n) => Math.min(100, (100 * n) / total).toFixed(1) + '%';
    const b = h('div', { class: 'bar', title: done + ' done, ' + failed + ' failed of ' + total });
    const ok = h('span');
    ok.style.width = pct(done);
    const bad = h('span', { class: 'failed' });
    bad.style.left = pct(done);
    bad.style.width = pct(failed);
    b.append(ok, bad);
    return b;
  }
  function setPage(title, ...content) {
    // Through h(): absent parts (null) are left out and strings become text nodes.
    main.replaceChildren(...h('div', {}, h('h1', {}, title), ...content).childNodes);
  }

  // ---- API ----------------------------------------------------------------
  async function api(path, options) {
    const opts = Object.assign({ headers: {} }, options || {});
    if (opts.method === 'POST') {
      opts.headers['content-type'] = 'application/json';
      if (tokenInput.value) opts.headers.authorization = 'Bearer ' + tokenInput.value;
      opts.body = JSON.stringify(opts.json || {});
    }
    const res = await fetch(path, opts);
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      const e = new Error((body.error && body.error.message) || 'HTTP ' + res.status);
      e.status = res.status;
      e.field = body.error && body.error.field;
      e.code = body.error && body.error.code;
      throw e;
    }
    return body;
  }

  // ---- live events: one EventSource, pages subscribe ------------------------
  const listeners = new Set();
  const liveEl = document.getElementById('live');
  const source = new EventSource('/api/events');
  source.onopen = () => {
    liveEl.textContent = 'live';
    liveEl.className = 'live on';
  };
  source.onerror = () => {
    liveEl.textContent = 'reconnecting…';
    liveEl.className = 'live';
  };
  for (const type of ['run', 'step']) {
    source.addEventListener(type, (ev) => {
      let data;
      try {
        data = JSON.parse(ev.data);
      } catch {
        return;
      }
      for (const l of listeners) l(type, data);
    });
  }
  function subscribe(fn) {
    listeners.add(fn);
    return () => listeners.delete(fn);
  }

  // ---- plots (uPlot) --------------------------------------------------------
  function barPlot(title, labels, values, colors) {
    const holder = h('div', { class: 'plot', 'data-plot': title }, h('h3', {}, title));
    if (typeof uPlot === 'undefined') return holder;
    const xs = labels.map((_, i) => i);
    const opts = {
      width: 360,
      height: 200,
      legend: { show: false },
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{ values: (_u, splits) => splits.map((i) => (Number.isInteger(i) ? labels[i] || '' : '')), splits: () => xs }, {}],
      series: [
        {},
        {
          label: title,
          fill: colors || '#1f6feb',
          stroke: colors || '#1f6feb',
          paths: uPlot.paths.bars({ size: [0.6, 80] }),
          points: { show: false },
        },
      ],
    };
    new uPlot(opts, [xs, values], holder);
    return holder;
  }
  function timePlot(title, points) {
    const holder = h('div', { class: 'plot', 'data-plot': title }, h('h3', {}, title));
    if (typeof uPlot === 'undefined' || points.length === 0) {
      holder.append(h('p', { class: 'muted' }, 'No audits yet.'));
      return holder;
    }
    const series = [
      ['sent', '#6b7485'],
      ['delivered', '#1f6feb'],
      ['read', '#1a7f37'],
      ['notDelivered', '#c62828'],
    ];
    const data = [points.map((p) => p.at / 1000), ...series.map(([k]) => points.map((p) => p[k]))];
    // One audit alone would stretch the time axis over years: show an hour either side.
    const xRange = (_u, min, max) => (max - min < 3600 ? [min - 3600, max + 3600] : [min, max]);
    new uPlot(
      {
        width: 720,
        height: 240,
        scales: { x: { time: true, range: xRange } },
        series: [{}, ...series.map(([k, c]) => ({ label: k, stroke: c, width: 2, points: { size: 6 } }))],
      },
      data,
      holder,
    );
    return holder;
  }

  // ---- Flows ------------------------------------------------------------------
  /** on.notification as words: the type, then each filter given (text as the regular expression it is). */
  function notificationText(n) {
    if (typeof n !== 'object') return 'on notification ' + String(n);
    const parts = ['on ' + (n.type || 'incomingMessageReceived')];
    if (n.text !== undefined) parts.push('text matching /' + n.text + '/i');
    if (n.chatId !== undefined) parts.push('from chat ' + n.chatId);
    if (n.instance !== undefined) parts.push('of instance ' + n.instance);
    return parts.join(', ');
  }
  function triggerText(t) {
    const parts = [];
    if (t.schedule) parts.push(t.schedule.description + (t.schedule.nextLocal ? ', next ' + t.schedule.nextLocal : ''));
    if (t.notification) parts.push(notificationText(t.notification));
    if (t.startup) parts.push('at startup');
    return parts.length ? parts.join('; ') : 'manual only';
  }
  function runForm(flow) {
    const form = h('form', { class: 'inputs', 'data-flow': flow.name });
    const fields = {};
    for (const inp of flow.inputs) {
      const placeholder = inp.file
        ? 'file (default ' + inp.file + ')'
        : inp.default !== undefined
          ? 'default ' + JSON.stringify(inp.default)
          : inp.type;
      const input = h('input', { type: 'text', name: inp.name, placeholder });
      fields[inp.name] = input;
      form.append(
        h(
          'label',
          {},
          h('span', {}, inp.name + (inp.required ? ' *' : '')),
          input,
          ' ',
          h('small', { class: 'muted' }, inp.description || ''),
        ),
      );
    }
    const dry = h('input', { type: 'checkbox', name: 'dryRun' });
    const msg = h('div', { class: 'error', role: 'alert' });
    form.append(h('label', {}, h('span', {}, 'dry run'), dry), h('button', { type: 'submit', class: 'primary' }, 'Start run'), msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const inputs = {};
      for (const [k, el] of Object.entries(fields)) if (el.value !== '') inputs[k] = el.value;
      msg.textContent = '';
      try {
        const r = await api('/api/flows/' + encodeURIComponent(flow.name) + '/runs', {
          method: 'POST',
          json: { inputs, dryRun: dry.checked },
        });
        location.hash = '#/runs/' + encodeURIComponent(r.runId);
      } catch (e) {
        msg.textContent = (e.field ? e.field + ': ' : '') + e.message;
        const name = e.field && e.field.startsWith('inputs.') ? e.field.slice(7) : undefined;
        if (name && fields[name]) fields[name].focus();
      }
    });
    return form;
  }
  async function flowsPage() {
    const data = await api('/api/flows');
    const rows = data.flows.map((f) => {
      const formCell = h('td', { colspan: 5 });
      const formRow = h('tr', { hidden: true }, formCell);
      const runBtn = h(
        'button',
        {
          class: 'primary',
          'data-run': f.name,
          onclick: () => {
            if (formRow.hidden) formCell.replaceChildren(runForm(f));
            formRow.hidden = !formRow.hidden;
          },
        },
        'Run now',
      );
      const last = f.lastRun
        ? h('a', { href: '#/runs/' + encodeURIComponent(f.lastRun.id) }, statusBadge(f.lastRun.status), ' ', fmtTime(f.lastRun.startedAt))
        : h('span', { class: 'muted' }, 'never run');
      return [
        h(
          'tr',
          { 'data-flow': f.name },
          h('td', {}, h('strong', {}, f.name), h('div', { class: 'muted' }, f.description || '')),
          h('td', {}, triggerText(Object.assign({}, f.trigger, f.notification ? { notification: f.notification } : {}))),
          h('td', {}, f.instance),
          h('td', {}, last),
          h('td', {}, runBtn),
        ),
        formRow,
      ];
    });
    const errors = data.errors.map((e) => h('div', { class: 'notice' }, e.message));
    setPage(
      'Flows',
      ...errors,
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h('tr', {}, h('th', {}, 'Flow'), h('th', {}, 'Trigger'), h('th', {}, 'Instance'), h('th', {}, 'Last run'), h('th', {}, '')),
        ),
        h('tbody', {}, rows.flat()),
      ),
    );
  }

  // ---- Runs -------------------------------------------------------------------
  function runRow(r) {
    const progress =
      r.status === 'waiting'
        ? h('span', { class: 'muted' }, 'waiting: ' + (r.waitReason || '') + (r.waitingUntil ? ' until ' + fmtTime(r.waitingUntil) : ''))
        : h(
            'span',
            {},
            r.itemsDone +
              ' done' +
              (r.itemsFailed ? ', ' + r.itemsFailed + ' failed' : '') +
              (r.currentStep && r.status === 'running' ? ' · ' + r.currentStep : ''),
          );
    return h(
      'tr',
      { 'data-run': r.id },
      h('td', {}, h('a', { href: '#/runs/' + encodeURIComponent(r.id) }, r.id)),
      h('td', {}, r.flow),
      h(
        'td',
        {},
        statusBadge(r.status),
        r.cancelRequested && r.status === 'running' ? h('small', { class: 'muted' }, ' cancelling') : null,
      ),
      h('td', {}, r.trigger + (r.dryRun ? ' (dry run)' : '')),
      h('td', {}, fmtTime(r.startedAt)),
      h('td', { class: 'num' }, fmtDuration(r.durationMs !== undefined ? r.durationMs : Date.now() - r.startedAt)),
      h('td', {}, progress),
    );
  }
  async function runsPage(params) {
    const flow = params.get('flow') || '';
    const status = params.get('status') || '';
    const q = new URLSearchParams({ limit: '100' });
    if (flow) q.set('flow', flow);
    if (status) q.set('status', status);
    const [data, flows] = await Promise.all([api('/api/runs?' + q), api('/api/flows')]);
    const flowSel = h(
      'select',
      { name: 'flow' },
      h('option', { value: '' }, 'all flows'),
      flows.flows.map((f) => h('option', { value: f.name, selected: f.name === flow }, f.name)),
    );
    const statusSel = h(
      'select',
      { name: 'status' },
      h('option', { value: '' }, 'any status'),
      ['running', 'waiting', 'succeeded', 'failed', 'interrupted', 'cancelled'].map((s) =>
        h('option', { value: s, selected: s === status }, s),
      ),
    );
    const apply = () => {
      const p = new URLSearchParams();
      if (flowSel.value) p.set('flow', flowSel.value);
      if (statusSel.value) p.set('status', statusSel.value);
      location.hash = '#/runs' + (p.toString() ? '?' + p : '');
    };
    flowSel.addEventListener('change', apply);
    statusSel.addEventListener('change', apply);
    const tbody = h('tbody', {}, data.runs.map(runRow));
    setPage(
      'Runs',
      h('div', { class: 'filters' }, flowSel, statusSel),
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Run', 'Flow', 'Status', 'Trigger', 'Started', 'Duration', 'Progress'].map((t) => h('th', {}, t)),
          ),
        ),
        tbody,
      ),
      data.runs.length === 0 ? h('p', { class: 'muted' }, 'No runs yet.') : null,
    );
    return subscribe((type, r) => {
      if (type !== 'run') return;
      if ((flow && r.flow !== flow) || (status && r.status !== status)) return;
      const row = runRow(r);
      const old = [...tbody.children].find((tr) => tr.getAttribute('data-run') === r.id);
      if (old) old.replaceWith(row);
      else tbody.prepend(row);
    });
  }

  // ---- Run page ---------------------------------------------------------------
  function stepPlots(s) {
    const o = s.output;
    if (!o || typeof o !== 'object') return null;
    if (s.action === 'files.broadcast') {
      return barPlot(
        'Delivery funnel: ' + s.step,
        ['recipients', 'sent', 'delivered', 'read', 'failed'],
        [o.recipients || o.total || 0, o.sent || 0, o.delivered || 0, o.read || 0, o.failed || 0],
      );
    }
    if (s.action === 'checkAccount.bulk') {
      return barPlot(
        'Accounts: ' + s.step,
        ['exists', 'none', 'invalid', 'failed'],
        [o.exists || 0, o.none || 0, o.invalid || 0, o.failed || 0],
        '#1a7f37',
      );
    }
    return null;
  }
  async function runPage(id) {
    const data = await api('/api/runs/' + encodeURIComponent(id));
    const r = data.run;
    const note = h('div', { role: 'status' });
    const act = (what) => async () => {
      note.textContent = '';
      try {
        const r = await api('/api/runs/' + encodeURIComponent(id) + '/' + what, { method: 'POST' });
        if (what === 'retry' && r.runId) location.hash = '#/runs/' + encodeURIComponent(r.runId);
        else note.textContent = 'Cancel requested: the run stops at the next item.';
      } catch (e) {
        note.className = 'error';
        note.textContent = e.message;
      }
    };
    const active = ['running', 'waiting', 'interrupted'].includes(r.status);
    const steps = h(
      'table',
      { 'data-steps': '' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Step', 'Action', 'Status', 'Done', 'Failed', 'Total', 'Progress', 'Duration', 'Report'].map((t) => h('th', {}, t)),
        ),
      ),
      h(
        'tbody',
        {},
        data.steps.map((s) =>
          h(
            'tr',
            { 'data-step': s.step },
            h('td', {}, s.step),
            h('td', {}, s.action),
            h('td', {}, statusBadge(s.status)),
            h('td', { class: 'num', 'data-count': 'done' }, s.done),
            h('td', { class: 'num', 'data-count': 'failed' }, s.failed),
            h('td', { class: 'num' }, s.total === undefined ? '' : s.total),
            h('td', {}, bar(s.done, s.failed, s.total)),
            h('td', { class: 'num' }, fmtDuration(s.durationMs)),
            h('td', {}, s.reportUrl ? h('a', { href: s.reportUrl, target: '_blank', rel: 'noopener' }, 'report') : ''),
          ),
        ),
      ),
    );
    const plots = data.steps.map(stepPlots).filter(Boolean);
    const failed = data.failedItems.length
      ? h(
          'table',
          {},
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Step', 'Item', 'Attempts', 'Error'].map((t) => h('th', {}, t)),
            ),
          ),
          h(
            'tbody',
            {},
            data.failedItems.map((f) =>
              h(
                'tr',
                {},
                h('td', {}, f.step),
                h('td', { class: 'num' }, f.index),
                h('td', { class: 'num' }, f.attempts),
                h('td', {}, f.error ? (f.error.code ? f.error.code + ': ' : '') + f.error.message : ''),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No failed items.');
    setPage(
      'Run ' + r.id,
      h(
        'div',
        { class: 'kv' },
        h('span', { class: 'muted' }, 'Flow'),
        h('a', { href: '#/runs?flow=' + encodeURIComponent(r.flow) }, r.flow),
        h('span', { class: 'muted' }, 'Status'),
        h('span', { 'data-run-status': r.status }, statusBadge(r.status), r.cancelRequested && active ? ' (cancel requested)' : ''),
        h('span', { class: 'muted' }, 'Trigger'),
        h('span', {}, r.trigger + (r.dryRun ? ' (dry run)' : '')),
        h('span', { class: 'muted' }, 'Started'),
        h('span', {}, fmtTime(r.startedAt)),
        h('span', { class: 'muted' }, 'Duration'),
        h('span', {}, fmtDuration(r.durationMs !== undefined ? r.durationMs : Date.now() - r.startedAt)),
        h('span', { class: 'muted' }, 'Items'),
        h('span', { 'data-items': '' }, r.itemsDone + ' done, ' + r.itemsFailed + ' failed'),
        r.waitReason
          ? [
              h('span', { class: 'muted' }, 'Waiting'),
              h('span', {}, r.waitReason + (r.waitingUntil ? ' until ' + fmtTime(r.waitingUntil) : '')),
            ]
          : null,
        r.error
          ? [
              h('span', { class: 'muted' }, 'Error'),
              h('span', { class: 'error' }, (r.error.code ? r.error.code + ': ' : '') + r.error.message),
            ]
          : null,
      ),
      h(
        'p',
        {},
        h('button', { onclick: act('cancel'), disabled: !active || r.cancelRequested, 'data-action': 'cancel' }, 'Cancel'),
        ' ',
        h(
          'button',
          { onclick: act('retry'), disabled: active || (r.itemsFailed === 0 && r.status !== 'failed'), 'data-action': 'retry' },
          'Retry failed items',
        ),
        ' ',
        note,
      ),
      h('h2', {}, 'Steps'),
      steps,
      plots.length ? h('div', { class: 'plots' }, plots) : null,
      h('h2', {}, 'Failed items'),
      failed,
      data.waits.length
        ? [
            h('h2', {}, 'Waits'),
            h(
              'ul',
              {},
              data.waits.map((w) => h('li', {}, w.step + ': ' + w.reason + ' until ' + fmtTime(w.until))),
            ),
          ]
        : null,
      data.logs && data.logs.length
        ? [
            h('h2', {}, 'Log'),
            h(
              'pre',
              { 'data-logs': '' },
              data.logs
                .map(
                  (l) => (l.at ? new Date(l.at).toLocaleTimeString() + ' ' : '') + (l.level || '').toUpperCase() + ' ' + (l.message || ''),
                )
                .join('\n'),
            ),
          ]
        : null,
      h('h2', {}, 'Inputs'),
      h('pre', {}, JSON.stringify(data.inputs, null, 2)),
    );
    // Live: re-read this run when an event names it, at most twice a second.
    let timer;
    return subscribe((_type, e) => {
      if ((e.runId || e.id) !== id || timer) return;
      timer = setTimeout(() => {
        timer = undefined;
        if (location.hash.startsWith('#/runs/' + encodeURIComponent(id))) render();
      }, 500);
    });
  }

  // ---- Instances --------------------------------------------------------------
  /** The instance's state, or why it is not known (unreachable with the error code; not asked). */
  function stateCell(i) {
    const live = i.live;
    if (!live) return h('span', { class: 'muted' }, '-');
    if (live.reachable === null) return h('span', { class: 'muted', title: live.note || '' }, 'not asked');
    if (!live.reachable) return h('span', { class: 'error' }, 'unreachable (' + live.error + ')');
    return h('span', {}, live.state);
  }
  /** Messages waiting and when the next one leaves at the latest. */
  function queueCell(i) {
    const live = i.live;
    if (!live || !live.reachable) return h('span', { class: 'muted' }, '-');
    if (!live.queue) return h('span', { class: 'error' }, 'unknown (' + live.queueError + ')');
    const q = live.queue;
    const text = q.length + ' waiting';
    if (!q.length) return h('span', {}, text);
    const next = q.nextReleaseBy !== undefined ? ', next by ' + fmtTime(q.nextReleaseBy) : '';
    const every =
      q.sendIntervalMs !== undefined
        ? ' (one every ' + (q.sendIntervalMs < 1000 ? q.sendIntervalMs + ' ms' : fmtDuration(q.sendIntervalMs)) + ')'
        : '';
    return h('span', {}, text + next + every);
  }
  async function instancesPage() {
    const [data, audits] = await Promise.all([api('/api/instances'), api('/api/plots/audit')]);
    const note = h('div', { role: 'status' });
    const rows = data.instances.map((i) =>
      h(
        'tr',
        { 'data-instance': i.name },
        h('td', {}, h('strong', {}, i.name), h('div', { class: 'muted' }, i.identity)),
        h('td', {}, i.kind),
        h('td', { 'data-state': i.name }, stateCell(i)),
        h('td', { 'data-queue': i.name }, queueCell(i)),
        h('td', { 'data-optouts': i.name }, i.optOuts === undefined ? h('span', { class: 'muted' }, '-') : String(i.optOuts)),
        h(
          'td',
          {},
          i.pauses.length
            ? h(
                'ul',
                {},
                i.pauses.map((p) =>
                  h(
                    'li',
                    { 'data-pause': p.scope },
                    p.scope +
                      ': ' +
                      p.reason +
                      (p.active
                        ? ' until ' + fmtTime(p.until) + ' (' + fmtDuration(p.until - Date.now()) + ' left)'
                        : ' (ended ' + fmtTime(p.until) + ')'),
                  ),
                ),
              )
            : h('span', { class: 'muted' }, 'no pauses'),
        ),
        h(
          'td',
          {},
          i.pauses.length
            ? h(
                'button',
                {
                  'data-lift': i.name,
                  onclick: async () => {
                    try {
                      const r = await api('/api/instances/' + encodeURIComponent(i.name) + '/pauses/lift', { method: 'POST' });
                      note.textContent = 'Lifted ' + r.lifted + ' pause(s) of ' + i.name + '.';
                      render();
                    } catch (e) {
                      note.className = 'error';
                      note.textContent = e.message;
                    }
                  },
                },
                'Lift',
              )
            : '',
        ),
      ),
    );
    setPage(
      'Instances',
      note,
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Instance', 'Kind', 'State', 'Send queue', 'Opt-outs', 'Pauses', ''].map((t) => h('th', {}, t)),
          ),
        ),
        h('tbody', {}, rows),
      ),
      h('h2', {}, 'Outgoing audits'),
      timePlot('outgoing.audit: sent / delivered / read / not delivered', audits.points),
    );
  }

  // ---- router -----------------------------------------------------------------
  let unsubscribe;
  let rendering = 0;
  async function render() {
    const hash = location.hash || '#/runs';
    const [route, query] = hash.slice(1).split('?');
    const params = new URLSearchParams(query || '');
    const parts = route.split('/').filter(Boolean);
    const page = parts[0] || 'runs';
    for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.getAttribute('data-page') === page);
    const mine = ++rendering;
    try {
      let unsub;
      if (page === 'flows') unsub = await flowsPage();
      else if (page === 'instances') unsub = await instancesPage();
      else if (page === 'runs' && parts[1]) unsub = await runPage(decodeURIComponent(parts[1]));
      else unsub = await runsPage(params);
      if (mine !== rendering) {
        if (unsub) unsub();
        return;
      }
      if (unsubscribe) unsubscribe();
      unsubscribe = unsub;
      // For measurements (bench/ui-bench.ts): when the page's data is on screen.
      if (window.performance && window.performance.mark) window.performance.mark('msgflow:rendered');
    } catch (e) {
      if (mine === rendering) setPage('Error', h('p', { class: 'error' }, e.message));
    }
  }
  window.addEventListener('hashchange', render);
  render();
})();
