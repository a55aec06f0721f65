import { describeConformance } from './conformance/index.js';

describeConformance('http');
