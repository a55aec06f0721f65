/**
 * The built-in job actions: bulk account check, contact import, outgoing
 * audit, message broadcast (and its file preset), the opt-out list,
 * waitForReply, http.request, a conversation's dialog step, and chat.handover /
 * chat.release.
 */
import type { ActionDefinition } from '../engine/action.js';
import { checkAccountBulk } from './check-account-bulk.js';
import { contactsImport } from './contacts-import.js';
import { outgoingAudit } from './outgoing-audit.js';
import { filesBroadcast } from './files-broadcast.js';
import { messagesBroadcast } from './messages-broadcast.js';
import { httpRequest } from './http-request.js';
import { optOutAdd, optOutRemove } from './opt-out.js';
import { waitForReply } from './wait-for-reply.js';
import { dialog } from './dialog.js';
import { chatHandover, chatRelease } from './handover.js';

/** The name of the built-in action that reads replies the notification consumer records (the runtime consumes the instances its flows use). */
export { WAIT_FOR_REPLY } from './wait-for-reply.js';
/** The campaign action, whose funnel counts replies: the runtime consumes its instances' notifications. */
export { MESSAGES_BROADCAST } from './messages-broadcast.js';
/** A campaign's plan file (msgflow run --plan), which msgflow apply reads before it starts the run. */
export { readPlan } from './broadcast-plan.js';

/** Registered by the runtime next to the API-method actions. */
export const BUILTIN_JOB_ACTIONS: ActionDefinition<any, any>[] = [
  checkAccountBulk,
  contactsImport,
  outgoingAudit,
  filesBroadcast,
  messagesBroadcast,
  optOutAdd,
  optOutRemove,
  waitForReply,
  dialog,
  httpRequest,
  chatHandover,
  chatRelease,
];

/** http.request with config.yaml's `http.allowPrivate`: the runtime registers it in place of the default one. */
export { HTTP_REQUEST, httpRequestAction } from './http-request.js';
