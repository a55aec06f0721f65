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
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof window.Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const pad = (n) => String(n).padStart(2, '0');
  /** The browser's short name of its zone at that date (`CET`, `GMT+5:30`, `UTC`): it changes with daylight saving. */
  function zoneName(d) {
    const part = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' }).formatToParts(d).find((p) => p.type === 'timeZoneName');
    return part ? part.value : '';
  }
  /** The one format of every time on the pages: local date and time with the zone, `2026-11-25 09:00:00 CET`. */
  function timeText(ms) {
    const d = new Date(ms);
    const date = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
    return date + ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds()) + ' ' + zoneName(d);
  }
  /** A time as an element: local time with the zone, the ISO time in UTC as its tooltip. */
  function timeEl(ms) {
    if (!ms) return '';
    const iso = new Date(ms).toISOString();
    return h('time', { datetime: iso, title: iso }, timeText(ms));
  }
  const ISO_TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?Z/g;
  /** A text from the server (a wait reason, a log line) with each ISO time in it shown in the one format. */
  function withTimes(text) {
    const s = String(text);
    const out = [];
    let at = 0;
    for (const m of s.matchAll(ISO_TIME)) {
      out.push(s.slice(at, m.index), timeEl(Date.parse(m[0])));
      at = m.index + m[0].length;
    }
    out.push(s.slice(at));
    return out;
  }
  /** Why a run waits and until when; the time said once, also when the reason names it. */
  function waitText(reason, until) {
    const named = [...String(reason || '').matchAll(ISO_TIME)].some((m) => Date.parse(m[0]) === until);
    return [withTimes(reason || ''), until && !named ? [' until ', timeEl(until)] : null];
  }
  /** The same as plain text (a confirmation dialog). */
  const timesAsText = (text) => String(text).replace(ISO_TIME, (iso) => timeText(Date.parse(iso)));
  function fmtDuration(ms) {
    if (ms === undefined || ms === null) return '';
    const s = Math.round(ms / 1000);
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm' + String(s % 60).padStart(2, '0') + 's';
    return Math.floor(m / 60) + 'h' + String(m % 60).padStart(2, '0') + 'm';
  }
  const statusBadge = (s) => h('span', { class: 'status ' + s, 'data-status': s }, s);
  /** A table whose cells carry their column's name (`data-label`): on a phone each row shows as a card of labelled lines. */
  function dataTable(attrs, headers, rows) {
    for (const tr of rows) {
      [...tr.children].forEach((td, i) => {
        if (headers[i] && td.getAttribute('colspan') === null) td.setAttribute('data-label', headers[i]);
      });
    }
    return h(
      'table',
      Object.assign({ class: 'cards' }, attrs),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headers.map((t) => h('th', {}, t)),
        ),
      ),
      h('tbody', {}, rows),
    );
  }
  function setPage(title, ...content) {
    // Through h(): absent parts (null) are left out and strings become text nodes.
    main.replaceChildren(...h('div', {}, h('h1', {}, title), ...content).childNodes);
    main.removeAttribute('aria-busy');
  }
  /** Until a page's first answer: says it is loading (never "No runs yet." before the runs are known). */
  function showLoading(what) {
    main.setAttribute('aria-busy', 'true');
    main.replaceChildren(h('p', { class: 'muted loading', 'data-loading': '' }, 'Loading ' + what + '…'));
  }

  // ---- outcomes: one colour each, in the progress bars, the plots and their legends ----
  /** [key, label, meaning] of a step's outcomes, in the order the bar shows them. */
  const STEP_OUTCOMES = [
    ['done', 'done', 'succeeded'],
    ['failed', 'failed', 'failed'],
    ['invalid', 'invalid', 'rejected before any call'],
    ['duplicate', 'duplicate', 'a repeat of an earlier record'],
    ['skipped', 'skipped', 'not attempted by design'],
    ['waiting', 'waiting', 'held by a wait'],
  ];
  const swatch = (outcome) => h('span', { class: 'swatch o-' + outcome, 'aria-hidden': 'true' });
  /** A step's outcomes (its counters), each its own segment; a finished step's bar is full (records it never reached are a segment too). */
  function progressBar(s) {
    const o = s;
    const finished = !['running', 'waiting'].includes(s.status);
    const segments = STEP_OUTCOMES.map(([k, label]) => [k, label, o[k] || 0]).filter((seg) => seg[2] > 0);
    const met = segments.reduce((n, seg) => n + seg[2], 0);
    const total = Math.max(s.total || 0, met);
    if (finished && total > met) segments.push(['unreached', 'not reached', total - met]);
    const counts = h(
      'div',
      { class: 'counts' },
      STEP_OUTCOMES.filter(([k]) => k === 'done' || k === 'failed' || o[k] > 0).map(([k, label, meaning]) =>
        h('span', { class: 'count', title: label + ': ' + meaning }, swatch(k), h('span', { 'data-count': k }, o[k] || 0), ' ' + label),
      ),
      s.total !== undefined ? h('span', { class: 'count muted' }, 'of ', h('span', { 'data-count': 'total' }, s.total)) : null,
      finished && total > met ? h('span', { class: 'count' }, swatch('unreached'), total - met + ' not reached') : null,
    );
    if (!total) return counts;
    const bar = h('div', { class: 'bar', 'data-bar': s.step, title: segments.map((seg) => seg[1] + ': ' + seg[2]).join(', ') });
    for (const [k, label, n] of segments) {
      const seg = h('span', { class: 'seg o-' + k, 'data-outcome': k, title: label + ': ' + n });
      seg.style.width = ((100 * n) / total).toFixed(3) + '%';
      bar.append(seg);
    }
    return h('div', {}, bar, counts);
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
  /**
   * Listens from now, before a page reads its data: events that come while
   * the read is under way are kept and handed to the page's handler first
   * (`start`), so a change that lands between the server's answer and the
   * page's subscription (a run that ends while its page loads) is never lost.
   */
  function listenFromNow() {
    let early = [];
    let handler = null;
    const off = subscribe((type, data) => (handler ? handler(type, data) : early.push([type, data])));
    return {
      start(fn) {
        handler = fn;
        const missed = early;
        early = [];
        for (const [type, data] of missed) fn(type, data);
        return off;
      },
      stop: off,
    };
  }

  // ---- plots ------------------------------------------------------------------
  /**
   * Bars of a few categories, drawn as elements: each bar in its outcome's
   * colour, with a legend that names the colours and says what each means.
   * @param bars [{ key, label, value, meaning }]
   */
  function barChart(title, bars) {
    const max = Math.max(1, ...bars.map((b) => b.value));
    const cols = bars.map((b) => {
      const fill = h('span', { class: 'fill o-' + b.key });
      fill.style.height = ((100 * b.value) / max).toFixed(2) + '%';
      return h(
        'div',
        { class: 'col', 'data-bar': b.key, title: b.label + ': ' + b.value },
        h('span', { class: 'value' }, b.value),
        h('span', { class: 'track' }, fill),
        h('span', { class: 'label' }, b.label),
      );
    });
    const legend = h(
      'ul',
      { class: 'legend' },
      bars.map((b) => h('li', { 'data-legend': b.key }, swatch(b.key), h('strong', {}, b.label), ' ' + b.meaning)),
    );
    const summary = bars.map((b) => b.label + ' ' + b.value).join(', ');
    return h(
      'div',
      { class: 'plot', 'data-plot': title },
      h('h3', {}, title),
      h('div', { class: 'bars', role: 'img', 'aria-label': summary }, cols),
      legend,
    );
  }
  function timePlot(title, points) {
    const holder = h('div', { class: 'plot wide', 'data-plot': title }, h('h3', {}, title));
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
    // Audits less than an hour apart (one alone) show an hour either side. uPlot widens a single
    // time point by 86400 / its `ms` (1000 days in seconds) before asking: the data decide, not the span given.
    const first = data[0][0];
    const last = data[0][data[0].length - 1];
    const xRange = (_u, min, max) => (last - first < 3600 && min <= first && max >= last ? [first - 3600, last + 3600] : [min, max]);
    // As wide as the page allows (a phone is narrower than the plot's 720 px).
    const width = Math.max(240, Math.min(720, main.clientWidth - 40));
    new uPlot(
      {
        width,
        height: 240,
        scales: { x: { time: true, range: xRange } },
        // The time axis's span, ms, on the element: what the page shows of the history.
        hooks: {
          setScale: [
            (u, key) => key === 'x' && holder.setAttribute('data-x-span', String(Math.round((u.scales.x.max - u.scales.x.min) * 1000))),
          ],
        },
        // Ticks in the pages' one format (hours:minutes, with month-day over a day), the zone named once.
        axes: [
          {
            label: 'local time (' + zoneName(new Date()) + ')',
            space: 70,
            values: (u, splits) => splits.map((t) => timeText(t * 1000).slice(u.scales.x.max - u.scales.x.min < 86400 ? 11 : 5, 16)),
          },
          {},
        ],
        series: [
          { value: (_u, v) => (v === null || v === undefined ? '--' : timeText(v * 1000)) },
          ...series.map(([k, c]) => ({ label: k, stroke: c, width: 2, points: { size: 6 } })),
        ],
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
  function triggerCell(f) {
    const t = f.trigger;
    const parts = [];
    if (t.schedule) {
      parts.push([
        t.schedule.description + ' (' + t.schedule.timezone + ')',
        t.schedule.next ? [', next ', timeEl(t.schedule.next)] : null,
      ]);
    }
    const n = f.notification || t.notification;
    if (n) parts.push(notificationText(n));
    if (t.startup) parts.push('at startup');
    if (parts.length === 0) return 'manual only';
    return parts.flatMap((p, i) => (i ? ['; ', p] : [p]));
  }
  const MESSAGE_TYPES = ['incomingMessageReceived', 'outgoingMessageReceived', 'outgoingAPIMessageReceived'];
  /**
   * The sample event of a notification-triggered flow: the notification the run
   * starts with, as if it had arrived. A message: chat id, sender and text; any
   * other type: its JSON. Optional when the flow also runs by schedule or at startup.
   */
  function eventFields(f, n, preset) {
    const optional = Boolean(f.trigger.schedule || f.trigger.startup);
    const fields = {};
    const line = (name, label, input, hint) => {
      fields[name] = input;
      return h('label', {}, h('span', {}, label), input, ' ', hint ? h('small', { class: 'muted' }, hint) : null);
    };
    const intro = h(
      'p',
      { class: 'muted' },
      'A sample ' + n.type + ' notification: the run gets it as its event, as if it had arrived (' + notificationText(n) + ').',
      optional ? ' Leave it empty to start without one, as the schedule does.' : '',
    );
    const set = h('fieldset', { class: 'event', 'data-event': f.name }, h('legend', {}, 'Sample event'), intro);
    let value;
    if (MESSAGE_TYPES.includes(n.type)) {
      set.append(
        line(
          'chatId',
          'chat id' + (optional ? '' : ' *'),
          h('input', { type: 'text', name: 'event.chatId', value: n.chatId || '', placeholder: '79001234567@c.us' }),
        ),
        line('senderName', 'sender name', h('input', { type: 'text', name: 'event.senderName', placeholder: 'Sample sender' })),
        line(
          'text',
          'text' + (n.text !== undefined && !optional ? ' *' : ''),
          h('input', {
            type: 'text',
            name: 'event.text',
            placeholder: n.text !== undefined ? 'matching /' + n.text + '/i' : 'message text',
          }),
        ),
      );
      if (preset) {
        const sd = preset.senderData || {};
        const md = preset.messageData || {};
        fields.chatId.value = sd.chatId || '';
        fields.senderName.value = sd.senderName || '';
        fields.text.value =
          (md.textMessageData && md.textMessageData.textMessage) || (md.extendedTextMessageData && md.extendedTextMessageData.text) || '';
      }
      value = () => {
        const chatId = fields.chatId.value.trim();
        const text = fields.text.value;
        if (optional && !chatId && !text) return undefined;
        const name = fields.senderName.value.trim() || 'Sample sender';
        return {
          typeWebhook: n.type,
          senderData: { chatId, chatName: name, sender: chatId, senderName: name, senderContactName: name },
          messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: text } },
        };
      };
    } else {
      const sample =
        n.type === 'stateInstanceChanged'
          ? { typeWebhook: n.type, stateInstance: 'authorized' }
          : { typeWebhook: n.type, chatId: n.chatId || '79001234567@c.us', status: 'delivered', sendByApi: true };
      const json = h('textarea', { name: 'event.json', rows: 6 });
      json.value = JSON.stringify(preset || sample, null, 2);
      set.append(line('json', 'event (JSON)', json));
      value = () => {
        if (optional && !json.value.trim()) return undefined;
        try {
          return JSON.parse(json.value);
        } catch (e) {
          const err = new Error('not valid JSON (' + e.message + ')');
          err.field = 'event';
          throw err;
        }
      };
    }
    /** The input a refused field names (event.senderData.chatId → the chat id). */
    const inputFor = (field) =>
      /chatId$/.test(field) ? fields.chatId : /messageData/.test(field) ? fields.text : fields.json || fields.chatId;
    return { el: set, value, inputFor };
  }
  /**
   * Asks before a run that would wait (a closed send window) or not do its
   * work: `flow runs now but waits until …`. True: start it.
   */
  async function confirmWaits(flowName) {
    const pre = await api('/api/flows/' + encodeURIComponent(flowName) + '/preflight');
    if (!pre.waits.length) return true;
    const lines = pre.waits.map((w) =>
      w.until
        ? flowName + ' runs now but waits until ' + timeText(w.until) + ' (step ' + w.step + ': ' + timesAsText(w.reason) + ').'
        : flowName + ' runs now, but step ' + w.step + ' will not do its work: ' + timesAsText(w.reason) + '.',
    );
    return window.confirm(lines.join('\n') + '\n\nStart it?');
  }
  function waitNotice(flowName) {
    const el = h('div', { class: 'notice', 'data-wait-notice': flowName, hidden: true });
    api('/api/flows/' + encodeURIComponent(flowName) + '/preflight')
      .then((pre) => {
        if (!pre.waits.length) return;
        el.hidden = false;
        el.replaceChildren(
          ...pre.waits.map((w) =>
            h(
              'div',
              {},
              w.until
                ? ['Runs now but waits until ', timeEl(w.until), ': step ' + w.step + ', ', withTimes(w.reason), '.']
                : ['Step ' + w.step + ' will not do its work: ', withTimes(w.reason), '.'],
            ),
          ),
        );
      })
      .catch(() => {});
    return el;
  }
  /**
   * The Run now form; `preset` (a run replayed from its page: its inputs and
   * event) fills it in. Inputs read from a data file, and those the run page
   * could not show, stay empty: the run reads the declared file.
   */
  function runForm(flow, preset) {
    const form = h('form', { class: 'inputs', 'data-flow': flow.name });
    if (preset)
      form.append(
        h('p', { class: 'notice', 'data-replay': preset.run }, 'Replaying run ' + preset.run + ': its inputs and event are filled in.'),
      );
    form.append(waitNotice(flow.name));
    const fields = {};
    for (const inp of flow.inputs) {
      const placeholder = inp.file
        ? 'file (default ' + inp.file + ')'
        : inp.default !== undefined
          ? 'default ' + JSON.stringify(inp.default)
          : inp.type;
      const input = h('input', { type: 'text', name: inp.name, placeholder });
      const was = preset && preset.inputs ? preset.inputs[inp.name] : undefined;
      if (was !== undefined && was !== null && !inp.file && !(typeof was === 'string' && was.startsWith('(not shown')))
        input.value = typeof was === 'string' ? was : JSON.stringify(was);
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
    const n = flow.notification || flow.trigger.notification;
    const event = n ? eventFields(flow, n, preset && preset.event) : undefined;
    if (event) form.append(event.el);
    const dry = h('input', { type: 'checkbox', name: 'dryRun' });
    const msg = h('div', { class: 'error', role: 'alert' });
    form.append(h('label', {}, h('span', {}, 'dry run'), dry), h('button', { type: 'submit', class: 'primary' }, 'Start run'), msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const inputs = {};
      for (const [k, el] of Object.entries(fields)) if (el.value !== '') inputs[k] = el.value;
      msg.textContent = '';
      try {
        const body = { inputs, dryRun: dry.checked };
        const sample = event ? event.value() : undefined;
        if (sample !== undefined) body.event = sample;
        // A dry run calls no action: it never waits for a window.
        if (!dry.checked && !(await confirmWaits(flow.name))) {
          msg.textContent = 'Not started.';
          return;
        }
        const r = await api('/api/flows/' + encodeURIComponent(flow.name) + '/runs', { method: 'POST', json: body });
        location.hash = '#/runs/' + encodeURIComponent(r.runId);
      } catch (e) {
        // The API's message names the field already (`inputs.numbers: …`): said once.
        msg.textContent = e.field && !e.message.startsWith(e.field) ? e.field + ': ' + e.message : e.message;
        const name = e.field && e.field.startsWith('inputs.') ? e.field.slice(7) : undefined;
        const target = name ? fields[name] : e.field && e.field.startsWith('event') && event ? event.inputFor(e.field) : undefined;
        if (target) target.focus();
      }
    });
    return form;
  }
  /** A run's inputs and event that its page's Replay left for Run now (sessionStorage), for `flow`. */
  function replayOf(flow) {
    try {
      const p = JSON.parse(sessionStorage.getItem('msgflow.replay') || 'null');
      return p && p.flow === flow ? p : undefined;
    } catch {
      return undefined;
    }
  }
  async function flowsPage(params) {
    const data = await api('/api/flows');
    const replaying = params && params.get('replay');
    const headers = ['Flow', 'Trigger', 'Instance', 'Last run', ''];
    const rows = data.flows.map((f) => {
      const formCell = h('td', { colspan: 5 });
      const formRow = h('tr', { hidden: true, class: 'form-row' }, formCell);
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
      if (replaying === f.name) {
        const preset = replayOf(f.name);
        if (preset) {
          formCell.replaceChildren(runForm(f, preset));
          formRow.hidden = false;
        }
      }
      const last = f.lastRun
        ? h('a', { href: '#/runs/' + encodeURIComponent(f.lastRun.id) }, statusBadge(f.lastRun.status), ' ', timeEl(f.lastRun.startedAt))
        : h('span', { class: 'muted' }, 'never run');
      return [
        h(
          'tr',
          { 'data-flow': f.name },
          h('td', {}, h('strong', {}, f.name), h('div', { class: 'muted' }, f.description || '')),
          h('td', {}, triggerCell(f)),
          h('td', {}, f.instance),
          h('td', {}, last),
          h('td', {}, runBtn),
        ),
        formRow,
      ];
    });
    const errors = data.errors.map((e) => h('div', { class: 'notice' }, e.message));
    setPage('Flows', ...errors, dataTable({}, headers, rows.flat()));
  }

  // ---- Runs -------------------------------------------------------------------
  const RUN_HEADERS = ['Run', 'Flow', 'Status', 'Trigger', 'Started', 'Duration', 'Progress'];
  function runRow(r) {
    const progress =
      r.status === 'waiting'
        ? h('span', { class: 'muted' }, 'waiting: ', waitText(r.waitReason, r.waitingUntil))
        : h(
            'span',
            {},
            r.itemsDone +
              ' done' +
              (r.itemsFailed ? ', ' + r.itemsFailed + ' failed' : '') +
              (r.currentStep && r.status === 'running' ? ' · ' + r.currentStep : ''),
          );
    const cells = [
      h('td', {}, h('a', { href: '#/runs/' + encodeURIComponent(r.id) }, r.id)),
      h('td', {}, r.flow),
      h(
        'td',
        {},
        statusBadge(r.status),
        r.cancelRequested && r.status === 'running' ? h('small', { class: 'muted' }, ' cancelling') : null,
      ),
      h('td', {}, r.trigger + (r.dryRun ? ' (dry run)' : '')),
      h('td', {}, timeEl(r.startedAt)),
      h('td', { class: 'num' }, fmtDuration(r.durationMs !== undefined ? r.durationMs : Date.now() - r.startedAt)),
      h('td', {}, progress),
    ];
    RUN_HEADERS.forEach((label, i) => cells[i].setAttribute('data-label', label));
    return h('tr', { 'data-run': r.id }, cells);
  }
  /** What the search box holds, as the API's search: an error code, a chat id, or a phone number. */
  function searchParam(text) {
    const t = text.trim();
    if (!t) return undefined;
    if (/@(c|g)\.us$/.test(t)) return ['chat', t];
    if (/^[+\d][\d\s().-]*$/.test(t)) return ['phone', t];
    return ['code', t];
  }
  function runFilters(flows, flow, status, search) {
    const flowSel = h(
      'select',
      { name: 'flow', 'aria-label': 'flow' },
      h('option', { value: '' }, 'all flows'),
      flows.map((f) => h('option', { value: f.name, selected: f.name === flow }, f.name)),
    );
    const statusSel = h(
      'select',
      { name: 'status', 'aria-label': 'status' },
      h('option', { value: '' }, 'any status'),
      ['running', 'waiting', 'succeeded', 'failed', 'interrupted', 'cancelled'].map((s) =>
        h('option', { value: s, selected: s === status }, s),
      ),
    );
    const box = h('input', {
      type: 'search',
      name: 'search',
      'aria-label': 'search runs',
      placeholder: 'chat id, phone or error code',
      value: search || '',
    });
    const apply = () => {
      const p = new URLSearchParams();
      if (flowSel.value) p.set('flow', flowSel.value);
      if (statusSel.value) p.set('status', statusSel.value);
      const s = searchParam(box.value);
      if (s) p.set(s[0], s[1]);
      location.hash = '#/runs' + (p.toString() ? '?' + p : '');
    };
    flowSel.addEventListener('change', apply);
    statusSel.addEventListener('change', apply);
    const form = h('form', { class: 'filters', role: 'search' }, flowSel, statusSel, box, h('button', { type: 'submit' }, 'Search'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      apply();
    });
    return form;
  }
  async function runsPage(params) {
    const flow = params.get('flow') || '';
    const status = params.get('status') || '';
    const q = new URLSearchParams({ limit: '100' });
    if (flow) q.set('flow', flow);
    if (status) q.set('status', status);
    // A search shows what matched when the page opened; live runs are not matched against it.
    const searchKey = ['chat', 'phone', 'code'].find((k) => params.get(k));
    const search = searchKey ? params.get(searchKey) : '';
    if (searchKey) q.set(searchKey, search);
    const [data, flows] = await Promise.all([api('/api/runs?' + q), api('/api/flows')]);
    const table = dataTable({}, RUN_HEADERS, data.runs.map(runRow));
    const tbody = table.tBodies[0];
    // Said only once the answer is known to be empty, and gone when a run arrives live.
    const empty = h(
      'p',
      { class: 'muted', 'data-empty': '', hidden: data.runs.length > 0 },
      flow || status || search ? 'No runs match.' : 'No runs yet.',
    );
    setPage('Runs', runFilters(flows.flows, flow, status, search), table, empty);
    return (type, r) => {
      if (type !== 'run' || search) return;
      if ((flow && r.flow !== flow) || (status && r.status !== status)) return;
      const row = runRow(r);
      const old = [...tbody.children].find((tr) => tr.getAttribute('data-run') === r.id);
      if (old) old.replaceWith(row);
      else tbody.prepend(row);
      empty.hidden = true;
    };
  }

  // ---- Run page ---------------------------------------------------------------
  function stepPlots(s) {
    const o = s.output;
    if (!o || typeof o !== 'object') return null;
    if (s.action === 'files.broadcast') {
      return barChart('Delivery funnel: ' + s.step, [
        { key: 'recipients', label: 'recipients', value: o.recipients || o.total || 0, meaning: 'to send to' },
        { key: 'sent', label: 'sent', value: o.sent || 0, meaning: 'accepted by the service' },
        { key: 'delivered', label: 'delivered', value: o.delivered || 0, meaning: 'reached the phone' },
        { key: 'read', label: 'read', value: o.read || 0, meaning: 'opened' },
        { key: 'failed', label: 'failed', value: o.failed || 0, meaning: 'not sent' },
      ]);
    }
    if (s.action === 'messages.broadcast' && o.funnel && typeof o.funnel === 'object') {
      // One funnel per A/B variant (`all` without variants).
      return Object.entries(o.funnel).map(([variant, c]) =>
        barChart('Funnel: ' + s.step + ' · ' + variant, [
          { key: 'queued', label: 'queued', value: c.queued || 0, meaning: 'meant to get it' },
          { key: 'sent', label: 'sent', value: c.sent || 0, meaning: 'accepted and seen sent' },
          { key: 'delivered', label: 'delivered', value: c.delivered || 0, meaning: 'reached the phone' },
          { key: 'read', label: 'read', value: c.read || 0, meaning: 'opened' },
          { key: 'replied', label: 'replied', value: c.replied || 0, meaning: 'wrote back within the reply window' },
          { key: 'optedOut', label: 'opted out', value: c.optedOut || 0, meaning: 'on the opt-out list' },
          { key: 'failed', label: 'failed', value: c.failed || 0, meaning: 'not sent' },
          { key: 'unknown', label: 'unknown', value: c.unknown || 0, meaning: 'may have gone; never sent again' },
        ]),
      );
    }
    if (s.action === 'checkAccount.bulk') {
      return barChart('Accounts: ' + s.step, [
        { key: 'exists', label: 'exists', value: o.exists || 0, meaning: 'has an account' },
        { key: 'none', label: 'none', value: o.none || 0, meaning: 'has no account' },
        { key: 'invalid', label: 'invalid', value: o.invalid || 0, meaning: 'not a valid number (not checked)' },
        { key: 'failed', label: 'failed', value: o.failed || 0, meaning: 'the check failed' },
      ]);
    }
    return null;
  }
  function stepsTable(steps) {
    const headers = ['Step', 'Action', 'Status', 'Progress', 'Duration', 'Report'];
    const rows = steps.map((s) =>
      h(
        'tr',
        { 'data-step': s.step },
        h('td', {}, s.step),
        h('td', {}, s.action),
        h('td', {}, statusBadge(s.status)),
        h('td', { class: 'progress' }, progressBar(s)),
        h('td', { class: 'num' }, fmtDuration(s.durationMs)),
        h('td', {}, s.reportUrl ? h('a', { href: s.reportUrl, target: '_blank', rel: 'noopener' }, 'report') : ''),
      ),
    );
    return dataTable({ 'data-steps': '' }, headers, rows);
  }
  function failedTable(items) {
    if (!items.length) return h('p', { class: 'muted' }, 'No failed items.');
    const rows = items.map((f) =>
      h(
        'tr',
        {},
        h('td', {}, f.step),
        h('td', { class: 'num' }, f.index),
        h('td', { class: 'num' }, f.attempts),
        h('td', {}, f.error ? withTimes((f.error.code ? f.error.code + ': ' : '') + f.error.message) : ''),
      ),
    );
    return dataTable({}, ['Step', 'Item', 'Attempts', 'Error'], rows);
  }
  function runFacts(r, active) {
    return h(
      'div',
      { class: 'kv' },
      h('span', { class: 'muted' }, 'Flow'),
      h('a', { href: '#/runs?flow=' + encodeURIComponent(r.flow) }, r.flow),
      h('span', { class: 'muted' }, 'Status'),
      h('span', { 'data-run-status': r.status }, statusBadge(r.status), r.cancelRequested && active ? ' (cancel requested)' : ''),
      h('span', { class: 'muted' }, 'Trigger'),
      h('span', {}, r.trigger + (r.dryRun ? ' (dry run)' : '')),
      r.parent
        ? [
            h('span', { class: 'muted' }, 'Started by'),
            h(
              'span',
              { 'data-parent': r.parent.runId },
              h('a', { href: '#/runs/' + encodeURIComponent(r.parent.runId) }, r.parent.runId),
              ' (' + r.parent.flow + ', step ' + r.parent.step + (r.parent.item !== undefined ? ', item ' + r.parent.item : '') + ')',
            ),
          ]
        : null,
      r.slot !== undefined ? [h('span', { class: 'muted' }, 'Slot'), h('span', {}, timeEl(r.slot))] : null,
      h('span', { class: 'muted' }, 'Started'),
      h('span', {}, timeEl(r.startedAt)),
      h('span', { class: 'muted' }, 'Duration'),
      h('span', {}, fmtDuration(r.durationMs !== undefined ? r.durationMs : Date.now() - r.startedAt)),
      h('span', { class: 'muted' }, 'Items'),
      h('span', { 'data-items': '' }, r.itemsDone + ' done, ' + r.itemsFailed + ' failed'),
      r.waitReason ? [h('span', { class: 'muted' }, 'Waiting'), h('span', {}, waitText(r.waitReason, r.waitingUntil))] : null,
      r.error
        ? [
            h('span', { class: 'muted' }, 'Error'),
            h('span', { class: 'error' }, withTimes((r.error.code ? r.error.code + ': ' : '') + r.error.message)),
          ]
        : null,
    );
  }
  /** What Cancel or Retry last answered on a run's page: a live refresh of the page keeps it. */
  let runNote = { id: undefined, text: '', cls: '' };
  /** Cancel (after a confirmation naming the run) and Retry. */
  function runActions(r, active, data) {
    const id = r.id;
    /** Run now with this run's inputs and event, filled in on the Flows page. */
    const replay = () => {
      sessionStorage.setItem('msgflow.replay', JSON.stringify({ flow: r.flow, run: id, inputs: data.inputs, event: data.event }));
      location.hash = '#/flows?replay=' + encodeURIComponent(r.flow);
    };
    const note = h('div', { role: 'status' });
    const say = (text, cls) => {
      runNote = { id, text, cls: cls || '' };
      note.className = runNote.cls;
      note.textContent = text;
    };
    if (runNote.id === id) say(runNote.text, runNote.cls);
    const post = async (what) => {
      say('');
      try {
        const res = await api('/api/runs/' + encodeURIComponent(id) + '/' + what, { method: 'POST' });
        if (what === 'retry' && res.runId) location.hash = '#/runs/' + encodeURIComponent(res.runId);
        else say('Cancel requested: the run stops at the next item.');
      } catch (e) {
        say(e.message, 'error');
      }
    };
    const cancel = () => {
      const ask = 'Cancel run ' + id + ' of ' + r.flow + '?\n\nIt stops at its next item; what it has done stays done.';
      if (window.confirm(ask)) return post('cancel');
      say('Not cancelled.');
    };
    return h(
      'p',
      { class: 'actions' },
      h('button', { onclick: cancel, disabled: !active || r.cancelRequested, 'data-action': 'cancel' }, 'Cancel'),
      ' ',
      h(
        'button',
        { onclick: () => post('retry'), disabled: active || (r.itemsFailed === 0 && r.status !== 'failed'), 'data-action': 'retry' },
        'Retry failed items',
      ),
      ' ',
      h('button', { onclick: replay, 'data-action': 'replay', title: 'Run now with these inputs and event' }, 'Replay'),
      ' ',
      note,
    );
  }
  function logBlock(logs) {
    if (!logs || !logs.length) return null;
    const lines = logs.flatMap((l) => [
      l.at ? [timeEl(l.at), ' '] : '',
      (l.level || '').toUpperCase() + ' ',
      withTimes(l.message || ''),
      '\n',
    ]);
    return [h('h2', {}, 'Log'), h('pre', { 'data-logs': '' }, lines)];
  }
  async function runPage(id) {
    const data = await api('/api/runs/' + encodeURIComponent(id));
    const r = data.run;
    const active = ['running', 'waiting', 'interrupted'].includes(r.status);
    // A step may plot several (a campaign: one funnel per variant).
    const plots = data.steps.flatMap((s) => stepPlots(s) || []);
    setPage(
      'Run ' + r.id,
      runFacts(r, active),
      runActions(r, active, data),
      h('h2', {}, 'Steps'),
      stepsTable(data.steps),
      plots.length ? h('div', { class: 'plots' }, plots) : null,
      h('h2', {}, 'Failed items'),
      failedTable(data.failedItems),
      data.waits.length
        ? [
            h('h2', {}, 'Waits'),
            h(
              'ul',
              {},
              data.waits.map((w) => h('li', {}, w.step + ': ', waitText(w.reason, w.until))),
            ),
          ]
        : null,
      logBlock(data.logs),
      h('h2', {}, 'Inputs'),
      h('pre', {}, JSON.stringify(data.inputs, null, 2)),
      data.event ? [h('h2', {}, 'Event'), h('pre', { 'data-event-json': '' }, JSON.stringify(data.event, null, 2))] : null,
    );
    // Live: re-read this run when an event names it, at most twice a second.
    let timer;
    return (_type, e) => {
      if ((e.runId || e.id) !== id || timer) return;
      timer = setTimeout(() => {
        timer = undefined;
        if (location.hash.startsWith('#/runs/' + encodeURIComponent(id))) render({ quiet: true });
      }, 500);
    };
  }

  // ---- Instances --------------------------------------------------------------
  const capitalised = (s) => s.charAt(0).toUpperCase() + s.slice(1);
  /** The instance's state, or why it is not known (unreachable with the error code; not asked, and what that means). */
  function stateCell(i) {
    const live = i.live;
    if (!live) return h('span', { class: 'muted' }, '-');
    if (live.reachable === null) {
      return h(
        'div',
        {},
        h('span', { class: 'muted' }, 'not asked'),
        live.note ? h('p', { class: 'explain', 'data-explain': i.name }, capitalised(live.note.replace(/^not asked: /, ''))) : null,
      );
    }
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
    const every =
      q.sendIntervalMs !== undefined
        ? ' (one every ' + (q.sendIntervalMs < 1000 ? q.sendIntervalMs + ' ms' : fmtDuration(q.sendIntervalMs)) + ')'
        : '';
    return h('span', {}, text, q.nextReleaseBy !== undefined ? [', next by ', timeEl(q.nextReleaseBy)] : null, every);
  }
  function pauseItem(p) {
    return h(
      'li',
      { 'data-pause': p.scope },
      p.scope + ': ',
      withTimes(p.reason),
      p.active ? [' until ', timeEl(p.until), ' (' + fmtDuration(p.until - Date.now()) + ' left)'] : [' (ended ', timeEl(p.until), ')'],
    );
  }
  /** Lift, after a confirmation naming the instance and each of its pauses. */
  function liftButton(i, note) {
    const lift = async () => {
      const list = i.pauses
        .map((p) => '- ' + p.scope + ': ' + timesAsText(p.reason) + (p.active ? ' until ' + timeText(p.until) : ' (ended)'))
        .join('\n');
      const ask =
        'Lift ' +
        (i.pauses.length === 1 ? 'the pause' : 'the ' + i.pauses.length + ' pauses') +
        ' of instance ' +
        i.name +
        '?\n' +
        list +
        '\n\nRuns waiting on it call the instance again at once.';
      if (!window.confirm(ask)) {
        note.className = '';
        note.textContent = 'Not lifted.';
        return;
      }
      try {
        const r = await api('/api/instances/' + encodeURIComponent(i.name) + '/pauses/lift', { method: 'POST' });
        note.className = '';
        note.textContent = 'Lifted ' + r.lifted + ' pause(s) of ' + i.name + '.';
        render({ quiet: true });
      } catch (e) {
        note.className = 'error';
        note.textContent = e.message;
      }
    };
    return h('button', { 'data-lift': i.name, onclick: lift }, 'Lift');
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
        h('td', {}, i.pauses.length ? h('ul', {}, i.pauses.map(pauseItem)) : h('span', { class: 'muted' }, 'no pauses')),
        h('td', {}, i.pauses.length ? liftButton(i, note) : ''),
      ),
    );
    setPage(
      'Instances',
      note,
      dataTable({}, ['Instance', 'Kind', 'State', 'Send queue', 'Opt-outs', 'Pauses', ''], rows),
      h('h2', {}, 'Outgoing audits'),
    );
    // Drawn once on the page, to take its width.
    main.append(timePlot('outgoing.audit: sent / delivered / read / not delivered', audits.points));
  }

  // ---- alerts -----------------------------------------------------------------
  /** Every alert's state, the raised ones first, each linking to its run when it has one. */
  async function alertsPage() {
    const data = await api('/api/alerts');
    const list = data.alerts.slice().sort((a, b) => (a.state === b.state ? 0 : a.state === 'raised' ? -1 : 1));
    const rows = list.map((a) =>
      h(
        'tr',
        { 'data-alert': a.id, 'data-state': a.state },
        h('td', {}, h('span', { class: 'status ' + (a.state === 'raised' ? 'failed' : 'succeeded') }, a.state)),
        h('td', {}, a.kind),
        h('td', {}, a.flow ? h('a', { href: '#/runs?flow=' + encodeURIComponent(a.flow) }, a.subject) : a.subject),
        h('td', {}, String(a.occurrences)),
        h('td', {}, timeEl(a.raisedAt), a.resolvedAt ? [' → resolved ', timeEl(a.resolvedAt)] : ''),
        h('td', {}, withTimes(a.message), a.runId ? [' ', h('a', { href: '#/runs/' + encodeURIComponent(a.runId) }, a.runId)] : ''),
      ),
    );
    setPage(
      'Alerts',
      list.length
        ? dataTable({}, ['State', 'Kind', 'Subject', 'Times', 'Raised', 'Last'], rows)
        : h('p', { class: 'muted' }, 'no alerts: failed runs, timeouts, missed SLAs and schedules, pauses and notification lag show here'),
    );
  }

  // ---- sessions -----------------------------------------------------------------
  /** The dialogs' sessions (docs/conversations.md): where each chat is, its vars, its last lines; chats waiting for a human. */
  async function sessionsPage() {
    const data = await api('/api/sessions');
    const when = (ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
    // Whether a chat is with a human is the handovers' say, not the session's: an operator's handover begins
    // before the session hears of it (at the chat's next message), and the session's 'handover' outlives the quiet time.
    const handedOver = new Set(data.handovers.map((x) => x.instance + ' ' + x.chatId));
    const status = (s) =>
      s.status === 'ended'
        ? 'ended (' + (s.endReason || 'end') + ')'
        : handedOver.has(s.instance + ' ' + s.chatId)
          ? 'handed over'
          : 'active';
    const lines = (s) =>
      h(
        'ul',
        { class: 'lines' },
        s.recent.map((l) =>
          h(
            'li',
            { class: l.from === 'bot' ? 'bot' : 'user' },
            h('span', { class: 'muted' }, l.from === 'bot' ? 'bot: ' : 'user: '),
            l.text,
          ),
        ),
      );
    const rows = data.sessions.map((s) =>
      h(
        'tr',
        { 'data-session': s.chatId + ' ' + s.flow },
        h('td', {}, h('strong', {}, s.chatId), h('div', { class: 'muted' }, s.instance)),
        h('td', {}, s.flow),
        h('td', { 'data-state': s.chatId }, s.state, s.history.length ? h('div', { class: 'muted' }, s.history.join(' > ')) : ''),
        h('td', { 'data-status': s.chatId }, status(s)),
        h(
          'td',
          { 'data-vars': s.chatId },
          Object.keys(s.vars).length ? h('code', {}, JSON.stringify(s.vars)) : h('span', { class: 'muted' }, '-'),
        ),
        h('td', {}, lines(s)),
        h('td', {}, when(s.updatedAt)),
      ),
    );
    const waiting = data.handovers.map((x) =>
      h(
        'li',
        { 'data-handover': x.chatId },
        h('strong', {}, x.chatId),
        ' (' + x.instance + ', ' + x.by + (x.until ? ', until ' + when(x.until) : '') + ')',
        x.reason ? ' ' + x.reason : '',
      ),
    );
    setPage(
      'Sessions',
      h('h2', {}, 'Waiting for a human'),
      waiting.length ? h('ul', { 'data-handovers': '' }, waiting) : h('p', { class: 'muted' }, 'No chat is handed over.'),
      h('h2', {}, 'Dialogs'),
      rows.length
        ? dataTable({}, ['Chat', 'Flow', 'State', 'Status', 'Vars', 'Last lines', 'Last activity'], rows)
        : h('p', { class: 'muted' }, 'No sessions yet.'),
    );
  }

  // ---- router -----------------------------------------------------------------
  let unsubscribe;
  let rendering = 0;
  let shown;
  const LABELS = { flows: 'flows', instances: 'instances', alerts: 'alerts', run: 'the run', runs: 'runs', sessions: 'sessions' };
  /** quiet: a live refresh of the page on screen, which stays while it loads (no "Loading…" flicker). */
  async function render(opts) {
    const hash = location.hash || '#/runs';
    const [route, query] = hash.slice(1).split('?');
    const params = new URLSearchParams(query || '');
    const parts = route.split('/').filter(Boolean);
    const page = parts[0] || 'runs';
    for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.getAttribute('data-page') === page);
    const mine = ++rendering;
    const kind = page === 'runs' && parts[1] ? 'run' : page;
    if (!(opts && opts.quiet && shown === hash)) showLoading(LABELS[kind] || 'runs');
    // A page that follows live events returns its handler; it gets every event from before its read on.
    const live = listenFromNow();
    try {
      let onEvent;
      if (page === 'flows') onEvent = await flowsPage(params);
      else if (page === 'instances') onEvent = await instancesPage();
      else if (page === 'alerts') onEvent = await alertsPage();
      else if (page === 'sessions') onEvent = await sessionsPage();
      else if (kind === 'run') onEvent = await runPage(decodeURIComponent(parts[1]));
      else onEvent = await runsPage(params);
      if (mine !== rendering) {
        live.stop();
        return;
      }
      shown = hash;
      if (unsubscribe) unsubscribe();
      unsubscribe = onEvent ? live.start(onEvent) : (live.stop(), undefined);
      // For measurements (bench/ui-bench.ts): when the page's data is on screen.
      if (window.performance && window.performance.mark) window.performance.mark('msgflow:rendered');
    } catch (e) {
      live.stop();
      if (mine === rendering) setPage('Error', h('p', { class: 'error' }, e.message));
    }
  }
  window.addEventListener('hashchange', () => render());
  render();
})();
