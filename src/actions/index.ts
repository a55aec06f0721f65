/**
 * The built-in job actions (issue 5): bulk account check, contact import,
 * outgoing audit and file broadcast, plus the helpers they share.
 */
import type { ActionDefinition } from '../engine/action.js';
import { checkAccountBulk } from './check-account-bulk.js';
import { contactsImport } from './contacts-import.js';
import { outgoingAudit } from './outgoing-audit.js';
import { filesBroadcast } from './files-broadcast.js';
import { optOutAdd, optOutRemove } from './opt-out.js';
import { waitForReply } from './wait-for-reply.js';

export {
  checkAccountBulk,
  CheckAccountBulkInput,
  checkAccountNamespace,
  pauseKey,
  PAUSES_NAMESPACE,
  CHECK_ACCOUNT_BULK,
  CHECK_REPORT_COLUMNS,
} from './check-account-bulk.js';
export type { CheckAccountBulkSummary, CheckResult, CachedCheck, CheckPause } from './check-account-bulk.js';
export {
  contactsImport,
  ContactsImportInput,
  contactsNamespace,
  CONTACTS_IMPORT,
  CONTACT_MODES,
  CONTACT_REPORT_COLUMNS,
} from './contacts-import.js';
export type { ContactsImportSummary, ContactRowResult, ContactMode } from './contacts-import.js';
export { outgoingAudit, OutgoingAuditInput, auditNamespace, computeAudit, OUTGOING_AUDIT } from './outgoing-audit.js';
export type { OutgoingAuditResult, AuditRecord, AuditTrend, ThresholdCrossing } from './outgoing-audit.js';
export { filesBroadcast, FilesBroadcastInput, FILES_BROADCAST, BROADCAST_REPORT_COLUMNS } from './files-broadcast.js';
export type { FilesBroadcastSummary } from './files-broadcast.js';
export type { RecipientRecord } from './broadcast-records.js';
export { optOutAdd, optOutRemove, optOutKey, OPT_OUT_ADD, OPT_OUT_REMOVE, type OptOutResult } from './opt-out.js';
export { waitForReply, WAIT_FOR_REPLY, type WaitForReplyResult } from './wait-for-reply.js';
export { normalisePhone, normaliseUsername } from './phone.js';
export { parseDuration, formatDuration } from '../util/duration.js';
export * from './kit/index.js';
export { resolveWindow, nextOpening } from './window.js';
export { createActionTestContext, runAction, type ActionTestContext, type ActionTestOptions } from './testing.js';

/** Registered by the runtime next to the API-method actions. */
export const BUILTIN_JOB_ACTIONS: ActionDefinition<any, any>[] = [
  checkAccountBulk,
  contactsImport,
  outgoingAudit,
  filesBroadcast,
  optOutAdd,
  optOutRemove,
  waitForReply,
];
