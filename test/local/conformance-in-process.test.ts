import { describeConformance } from './conformance/index.js';

describeConformance('in-process');
