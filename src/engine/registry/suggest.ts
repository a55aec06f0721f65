/** "Did you mean": one implementation, in util (config.yaml uses it too). */
export { closest, didYouMean, editDistance } from '../../util/suggest.js';
