// ESLint: typescript-eslint's recommended rules plus the layer rule of the
// README's "How it fits together", so a back-pointing import fails
// `npm run lint` in CI.
import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * What each top-level folder of src/ may import from src/ (itself always).
 * `engine` may use the store's and client's types but never the local service;
 * only `runtime` and `cli` wire the layers together.
 *
 * An entry is a folder (`'engine'`) or one module of it (`'util/duration'`).
 * `types` lists what a layer may import with type-only imports (`import type`,
 * or `import { type A }` where every name is a type): a type adds no code and
 * no order of loading at run time, so it does not make a layer depend on another.
 *
 * - `ui` (the dashboard) is a component the daemon serves: it reads the
 *   runtime it is handed, through the `Runtime` type only, so that
 *   `runtime` (the daemon) may start it.
 * - `cli` is a front end: it parses flags, calls the runtime (the daemon,
 *   the EngineClient, createRuntime, and src/runtime/frontend.ts and
 *   present.ts: the list of what a front end uses of the layers below: the
 *   error classes the exit code follows, util's text helpers, the records'
 *   types) and prints. Besides the runtime it imports only the engine's
 *   types (the events and flows it handles).
 */
const LAYERS = {
  api: [],
  util: ['api'],
  config: ['api', 'util', 'client', 'local', 'store'],
  client: ['api', 'util'],
  local: ['api', 'util'],
  store: ['api', 'util'],
  engine: ['api', 'util', 'store', 'client', 'config'],
  actions: ['api', 'util', 'engine', 'store', 'client'],
  // The runtime wires the built-in actions through their registry, never an action's internals.
  runtime: ['api', 'util', 'config', 'client', 'local', 'store', 'engine', 'actions/builtins', 'ui'],
  ui: { values: ['api', 'util', 'config', 'client', 'store', 'engine'], types: ['runtime'] },
  cli: { values: ['runtime'], types: ['engine'] },
};

/** `{ values, types }` of a layer; a plain list allows values (and so types) from those. */
function allowance(layer) {
  const a = LAYERS[layer];
  if (!a) return undefined;
  return Array.isArray(a) ? { values: a, types: [] } : { values: a.values, types: [...a.values, ...a.types] };
}

/** Whether `rel` (a path under src/, no extension) is in `list` of folders and modules. */
function listed(list, rel) {
  return list.some((entry) => rel === entry || rel.startsWith(`${entry}/`));
}

/** An import or re-export of types only: `import type`, `export type`, or every named binding marked `type`. */
function typeOnly(node) {
  if (node.importKind === 'type' || node.exportKind === 'type') return true;
  const specs = node.specifiers ?? [];
  return specs.length > 0 && specs.every((s) => s.importKind === 'type' || s.exportKind === 'type');
}

/**
 * Names a module exports that only its owner may import: the engine owns the
 * instance-wide pause records (src/engine/run/pauses.ts raises, lists and
 * lifts them; everyone else goes through it).
 */
const OWNED_EXPORTS = [{ from: 'engine/shared.ts', name: 'PAUSES_NS', owners: ['engine/shared.ts', 'engine/run/pauses.ts'] }];

/** The one module that writes the store's `shared:` prefix (sharedKvName). */
const SHARED_PREFIX_OWNER = 'engine/shared.ts';

/**
 * A rule of our own instead of a plugin: it resolves each relative import
 * against the importing file, so `src/local/instance` importing `../store/x.js`
 * (the local service's own src/local/store) is told apart from src/store,
 * which a path-pattern rule cannot do without a module resolver.
 */
export const layersPlugin = {
  rules: {
    layers: {
      meta: { type: 'problem', schema: [] },
      create(context) {
        const file = path.resolve(context.filename);
        const srcDir = path.resolve('src');
        const own = topFolder(path.relative(srcDir, file));
        const allowed = allowance(own);
        if (!allowed) return {};
        const check = (node, spec, types) => {
          if (typeof spec !== 'string' || !spec.startsWith('.')) return;
          const targetFile = path.relative(srcDir, path.resolve(path.dirname(file), spec));
          const target = topFolder(targetFile);
          if (!target || target === own || !(target in LAYERS)) return;
          const module = targetFile
            .split(path.sep)
            .join('/')
            .replace(/\.[jt]s$/, '');
          if (listed(allowed.values, module) || (types && listed(allowed.types, module))) return;
          const typesOnly = !types && listed(allowed.types, module) ? ' except its types (import type)' : '';
          context.report({
            node,
            message: `src/${own} must not import src/${module}${typesOnly} (layers point one way: see README "How it fits together")`,
          });
        };
        return {
          ImportDeclaration: (n) => check(n, n.source.value, typeOnly(n)),
          ExportNamedDeclaration: (n) => n.source && check(n, n.source.value, typeOnly(n)),
          ExportAllDeclaration: (n) => check(n, n.source.value, n.exportKind === 'type'),
          ImportExpression: (n) => n.source.type === 'Literal' && check(n, n.source.value, false),
        };
      },
    },
  },
};

/**
 * No internal barrels: an import names the module that
 * declares what it uses, so a folder's index.ts never drifts from its users
 * and no import cycle hides behind one. `src/index.ts`, the package's public
 * entry, is the only index.
 */
const noBarrels = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const file = path.resolve(context.filename);
    const rootIndex = path.resolve('src/index.ts');
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
      if (path.basename(target) !== 'index.ts' || target === rootIndex) return;
      if (!target.startsWith(path.resolve('src') + path.sep)) return;
      context.report({ node, message: `import the module that declares it, not ${spec} (src/ has no internal barrels)` });
    };
    return {
      ImportDeclaration: (n) => check(n, n.source.value),
      ExportNamedDeclaration: (n) => n.source && check(n, n.source.value),
      ExportAllDeclaration: (n) => check(n, n.source.value),
      ImportExpression: (n) => n.source.type === 'Literal' && check(n, n.source.value),
    };
  },
};
layersPlugin.rules['no-barrels'] = noBarrels;

/** Calls that change a Map, Set, WeakMap, WeakSet, array or registry in place. */
const MUTATORS = new Set([
  'set',
  'add',
  'delete',
  'clear',
  'push',
  'pop',
  'shift',
  'unshift',
  'splice',
  'sort',
  'reverse',
  'fill',
  'copyWithin',
]);
/** `// cache: <why it cannot collide>` (or the same line in a block comment): a documented cache. */
const CACHE_MARKER = /(^|\n)\s*\*?\s*cache:\s*\S/;

/**
 * No hidden module state: two runtimes embedded in one process (or two test
 * files sharing a worker's module cache) must not see each other's secrets,
 * locations or time zone. A module-level `let`/`var`, or a module-level
 * `const` that the module changes (a Map/Set/array it adds to, an object or
 * regex whose property it assigns), is refused unless a comment on it says
 * `cache: <why it cannot collide>` (a value computed from its key alone, or
 * state of a process-wide thing). State belongs to the object that owns it
 * (the runtime, the service, the compiled flow) and is passed where it is used.
 */
const noModuleState = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const source = context.sourceCode;
    const marked = (stmt) => {
      const before = source.getCommentsBefore(stmt);
      const after = source.getCommentsAfter(stmt).filter((c) => c.loc.start.line === stmt.loc.end.line);
      return [...before, ...after].some((c) => CACHE_MARKER.test(c.value));
    };
    const changed = (declarator) =>
      source.getDeclaredVariables(declarator).some((v) =>
        v.references.some((ref) => {
          const id = ref.identifier;
          const member = id.parent;
          if (member?.type !== 'MemberExpression' || member.object !== id) return false;
          const use = member.parent;
          if (use?.type === 'CallExpression' && use.callee === member) return !member.computed && MUTATORS.has(member.property.name);
          if (use?.type === 'AssignmentExpression') return use.left === member;
          if (use?.type === 'UpdateExpression') return true;
          return use?.type === 'UnaryExpression' && use.operator === 'delete';
        }),
      );
    return {
      VariableDeclaration(node) {
        const stmt = node.parent?.type === 'ExportNamedDeclaration' ? node.parent : node;
        if (stmt.parent?.type !== 'Program' || marked(stmt)) return;
        for (const d of node.declarations) {
          const name = d.id.type === 'Identifier' ? d.id.name : '(pattern)';
          if (node.kind !== 'const')
            context.report({
              node: d,
              message: `module-level \`${node.kind} ${name}\` is state shared by everything in the process: keep it on the object that owns it, or mark a cache with \`// cache: <why it cannot collide>\``,
            });
          else if (changed(d))
            context.report({
              node: d,
              message: `module-level \`${name}\` is changed at run time: state shared by everything in the process; keep it on the object that owns it, or mark a cache with \`// cache: <why it cannot collide>\``,
            });
        }
      },
    };
  },
};
layersPlugin.rules['no-module-state'] = noModuleState;
/**
 * What one module owns stays there: an OWNED_EXPORTS name is imported by its
 * owners only, and the `shared:` prefix of the store's namespaces is written
 * in SHARED_PREFIX_OWNER only (a namespace spelled twice splits its data
 * silently on a rename).
 */
const owned = {
  meta: { type: 'problem', schema: [] },
  create(context) {
    const srcDir = path.resolve('src');
    const self = path.relative(srcDir, path.resolve(context.filename)).split(path.sep).join('/');
    const startsShared = (text) => typeof text === 'string' && text.startsWith('shared:');
    return {
      ImportDeclaration(node) {
        const spec = node.source.value;
        if (typeof spec !== 'string' || !spec.startsWith('.')) return;
        const from = path
          .relative(srcDir, path.resolve(path.dirname(path.resolve(context.filename)), spec))
          .split(path.sep)
          .join('/')
          .replace(/\.js$/, '.ts');
        for (const s of node.specifiers) {
          const name = s.type === 'ImportSpecifier' ? s.imported.name : undefined;
          const rule = OWNED_EXPORTS.find((o) => o.from === from && o.name === name);
          if (rule && !rule.owners.includes(self))
            context.report({ node: s, message: `${name} belongs to ${rule.owners.map((f) => `src/${f}`).join(', ')}: go through them` });
        }
      },
      Literal(node) {
        if (self !== SHARED_PREFIX_OWNER && startsShared(node.value))
          context.report({
            node,
            message: `the store's 'shared:' prefix is written by sharedKvName() in src/${SHARED_PREFIX_OWNER} alone`,
          });
      },
      TemplateLiteral(node) {
        if (self !== SHARED_PREFIX_OWNER && startsShared(node.quasis[0]?.value.cooked))
          context.report({
            node,
            message: `the store's 'shared:' prefix is written by sharedKvName() in src/${SHARED_PREFIX_OWNER} alone`,
          });
      },
    };
  },
};
layersPlugin.rules.owned = owned;

function topFolder(rel) {
  if (rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  const parts = rel.split(path.sep);
  return parts.length > 1 ? parts[0] : undefined;
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test/artifacts/**', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
    rules: {
      // Escape hatches for JSON-shaped data and test doubles; reviewed, not forbidden.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-control-regex': 'off',
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'bench/**/*.js', 'examples/**/*.ts'],
    plugins: { msgflow: layersPlugin },
    rules: { 'msgflow/no-barrels': 'error' },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'msgflow/layers': 'error',
      'msgflow/no-module-state': 'error',
      'msgflow/owned': 'error',
      // A function that does not fit on a screen does several things: split it into named parts.
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
);
