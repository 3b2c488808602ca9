import type { DeadLetter } from './dead-letter.ts';
import type { DeadLetterFilter, DeadLetterStore } from './dead-letter-store.ts';
import type { RedriveOutcome, WebhookChannel } from './webhook-channel.ts';

export interface ReplayDeadLettersOptions {
  deadLetters: DeadLetterStore;
  /** The channel the letters go back into (all letters today are the webhook's). */
  channel: Pick<WebhookChannel, 'name' | 'redrive'>;
  filter?: DeadLetterFilter;
  /** List what would be re-driven and change nothing. @defaultValue false */
  dryRun?: boolean;
}

export interface ReplayedLetter {
  letter: DeadLetter;
  /** What the re-drive did; `undefined` in a dry run. */
  outcome: RedriveOutcome | undefined;
}

/**
 * Re-drives dead letters into their channel, oldest event first, so that events of one key go back
 * into its line in the order they were made. Each letter is removed in the same step as its event
 * is queued again: a replay interrupted half-way can simply be run again.
 */
export async function replayDeadLetters({
  deadLetters,
  channel,
  filter = {},
  dryRun = false,
}: ReplayDeadLettersOptions): Promise<ReplayedLetter[]> {
  const letters = (await deadLetters.list(filter)).filter((l) => l.channel === channel.name);
  const replayed: ReplayedLetter[] = [];
  for (const letter of letters) {
    replayed.push({
      letter,
      outcome: dryRun ? undefined : await channel.redrive(letter, deadLetters),
    });
  }
  return replayed;
}
