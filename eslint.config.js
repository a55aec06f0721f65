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
  runtime: ['api', 'util', 'config', 'client', 'local', 'store', 'engine', 'actions'],
  // The dashboard server: wiring-level like runtime, on top of it.
  ui: ['api', 'util', 'config', 'client', 'store', 'engine', 'runtime'],
  cli: ['api', 'util', 'config', 'client', 'local', 'store', 'engine', 'actions', 'runtime', 'ui'],
};

/**
 * Within an allowed layer, the only files of it a folder may import: the
 * runtime wires the built-in actions through their registry
 * (src/actions/builtins.ts), never an action's internals.
 */
const ONLY_THROUGH = {
  runtime: { actions: ['actions/builtins.ts'] },
};

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
const layersPlugin = {
  rules: {
    layers: {
      meta: { type: 'problem', schema: [] },
      create(context) {
        const file = path.resolve(context.filename);
        const srcDir = path.resolve('src');
        const own = topFolder(path.relative(srcDir, file));
        const allowed = LAYERS[own];
        if (!allowed) return {};
        const check = (node, spec) => {
          if (typeof spec !== 'string' || !spec.startsWith('.')) return;
          const rel = path.relative(srcDir, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts');
          const target = topFolder(rel);
          if (!target || target === own || !(target in LAYERS)) return;
          const only = ONLY_THROUGH[own]?.[target];
          if (allowed.includes(target) && (!only || only.includes(rel.split(path.sep).join('/')))) return;
          context.report({
            node,
            message: allowed.includes(target)
              ? `src/${own} may import src/${target} only through ${only.map((f) => `src/${f}`).join(', ')}`
              : `src/${own} must not import src/${target} (layers point one way: see README "How it fits together")`,
          });
        };
        return {
          ImportDeclaration: (n) => check(n, n.source.value),
          ExportNamedDeclaration: (n) => n.source && check(n, n.source.value),
          ExportAllDeclaration: (n) => check(n, n.source.value),
          ImportExpression: (n) => n.source.type === 'Literal' && check(n, n.source.value),
        };
      },
    },
  },
};

/**
 * Internal barrels were removed (issue 11): an import names the module that
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
      'msgflow/owned': 'error',
      // A function that does not fit on a screen does several things: split it into named parts.
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
);
