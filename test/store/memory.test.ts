import { createMemoryStore } from '../../src/store/memory-store.js';
import { describeStoreConformance } from './conformance.js';

describeStoreConformance('memory', async () => ({ store: createMemoryStore() }));
