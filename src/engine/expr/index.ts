/**
 * The flow expression language: `${{ ... }}` templates with paths into
 * inputs, env, steps, item, index and run; comparisons, boolean logic,
 * arithmetic and a documented set of functions (see functions.ts).
 * Evaluated by its own tokenizer, parser and tree-walking interpreter: no
 * eval, Function or vm, and only plain data is reachable.
 */
export { ExpressionError, ExpressionLimitError } from './errors.js';
export { parseExpression, SCOPE_ROOTS, type Node as ExprNode, type ScopeRoot } from './parser.js';
export { evaluate, DEFAULT_EXPR_LIMITS, type ExprLimits, type ExprScope, type StepScope } from './interpreter.js';
export {
  evaluateTemplate,
  evaluateCondition,
  parseTemplate,
  compileTemplate,
  hasTemplate,
  containsTemplate,
  noteTemplateLocation,
  templateLocation,
  type CompiledTemplate,
  type TemplatePart,
} from './template.js';
export { collectReferences, type Reference } from './references.js';
export { functionNames, lambdaFunctions } from './functions.js';
export { BLOCKED_KEYS, readMember, truthy, toText } from './data.js';
