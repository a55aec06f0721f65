/**
 * Answers to the instance's own messages, resolved against the history when
 * they arrive: a vote on a poll (`vote: {stanzaId, options}`) becomes the
 * pollUpdateMessage the service sends, every option with everyone who chose
 * it now; a pressed button gets its text.
 */
import { ValidationError } from '../../api/errors.js';
import type { Message } from '../../api/types.js';
import type { ParsedMessageInput } from '../message-input.js';
import type { History } from './history.js';

type Vote = Extract<ParsedMessageInput, { typeMessage: 'pollUpdateMessage' }>;
type Press = Extract<ParsedMessageInput, { typeMessage: 'buttonsResponseMessage' }>;

/**
 * `input` with what the history tells filled in.
 * @throws ValidationError naming the field when a vote is not on a poll of the chat, or names an option it has not
 */
export function resolveReplies(input: ParsedMessageInput, history: History): ParsedMessageInput {
  if (input.typeMessage === 'pollUpdateMessage' && input.vote) return resolveVote(input, history);
  if (input.typeMessage === 'buttonsResponseMessage' && input.buttonsResponseMessage.selectedButtonText === undefined) {
    return resolvePress(input, history);
  }
  return input;
}

function resolveVote(input: Vote, history: History): Vote {
  const vote = input.vote!;
  const poll = history.find(vote.stanzaId)?.message;
  if (!poll || poll.chatId !== input.chatId || poll.typeMessage !== 'pollMessage' || !poll.pollMessageData) {
    throw new ValidationError(`'vote.stanzaId' ${vote.stanzaId} is not a poll of chat ${input.chatId}`, 'vote.stanzaId');
  }
  const options = (poll.pollMessageData.options ?? []).map((o) => o.optionName);
  const unknown = vote.options.find((o) => !options.includes(o));
  if (unknown !== undefined) {
    throw new ValidationError(`'vote.options' has '${unknown}', not an option of the poll (${options.join(', ')})`, 'vote.options');
  }
  const multipleAnswers = poll.pollMessageData.multipleAnswers ?? false;
  if (!multipleAnswers && vote.options.length > 1) {
    throw new ValidationError("'vote.options' may name one option: the poll takes a single answer", 'vote.options');
  }
  const voter = input.senderId ?? input.chatId;
  const before = votersBefore(history, input.chatId, vote.stanzaId);
  const votes = options.map((optionName) => {
    const others = (before.get(optionName) ?? []).filter((v) => v !== voter);
    return { optionName, optionVoters: vote.options.includes(optionName) ? [...others, voter] : others };
  });
  const { vote: _v, ...rest } = input;
  return { ...rest, pollMessageData: { stanzaId: vote.stanzaId, name: poll.pollMessageData.name, votes, multipleAnswers } };
}

/** Who chose each option as of the poll's last update in the chat. */
function votersBefore(history: History, chatId: string, stanzaId: string): Map<string, string[]> {
  const last = history.findLast(chatId, (m) => m.typeMessage === 'pollUpdateMessage' && m.pollMessageData?.stanzaId === stanzaId);
  return new Map((last?.pollMessageData?.votes ?? []).map((v) => [v.optionName, v.optionVoters]));
}

function resolvePress(input: Press, history: History): Press {
  const r = input.buttonsResponseMessage;
  const pressed = buttonsOf(history.find(r.stanzaId)?.message).find((b) => b.buttonId === r.selectedButtonId);
  return { ...input, buttonsResponseMessage: { ...r, selectedButtonText: pressed?.buttonText ?? '' } };
}

/** The buttons a message offers (sendInteractiveButtonsReply, or a buttons message). */
function buttonsOf(m: Message | undefined): { buttonId: string; buttonText: string }[] {
  if (!m) return [];
  if (m.interactiveButtonsReply) return m.interactiveButtonsReply.buttons;
  const buttons = m.buttonsMessage?.buttons;
  return Array.isArray(buttons) ? (buttons as { buttonId: string; buttonText: string }[]) : [];
}
