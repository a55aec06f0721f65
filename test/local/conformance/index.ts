/**
 * The conformance suite of the local service: every behaviour it promises
 * (the spec's methods, limits and notifications), run once per transport. Nothing in it may depend on which transport runs.
 */
import { describe } from 'vitest';
import type { TransportKind } from '../../support/local-service.js';
import { authAndLimitsSuite } from './auth-limits.js';
import { checkAccountSuite } from './check-account.js';
import { contactsSuite } from './contacts.js';
import { historySuite } from './history.js';
import { notificationsSuite } from './notifications.js';
import { sendFileSuite } from './send-file.js';
import { sendingSuite } from './sending.js';
import { incomingKindsSuite } from './incoming-kinds.js';
import { chatsSuite } from './chats.js';
import { accountSuite } from './account.js';
import { fidelitySuite } from './fidelity.js';
import { groupsSuite } from './groups.js';
import { statusesSuite } from './statuses.js';

export function describeConformance(kind: TransportKind): void {
  describe(`local service conformance over ${kind}`, () => {
    contactsSuite(kind);
    historySuite(kind);
    sendFileSuite(kind);
    checkAccountSuite(kind);
    authAndLimitsSuite(kind);
    notificationsSuite(kind);
    sendingSuite(kind);
    incomingKindsSuite(kind);
    chatsSuite(kind);
    accountSuite(kind);
    fidelitySuite(kind);
    groupsSuite(kind);
    statusesSuite(kind);
  });
}
