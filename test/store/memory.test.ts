import { createMemoryStore } from '../../src/store/index.js';
import { describeStoreConformance } from './conformance.js';

describeStoreConformance('memory', async () => ({ store: createMemoryStore() }));
