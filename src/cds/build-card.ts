import type { KeptResult } from './kept-result.ts';
import { readVerdict, type Indicator } from './result-verdict.ts';

/** A CDS Hooks 2.0 card, as this service answers it (no suggestions, links or actions). */
export interface CdsCard {
  uuid: string;
  summary: string;
  indicator: Indicator;
  detail?: string;
  source: {
    label: string;
    url?: string;
    topic?: { system: string; code: string; display?: string };
  };
}

export interface CardSource {
  label: string;
  url?: string | undefined;
}

/** CDS Hooks: "One-sentence, <140-character summary". */
export const SUMMARY_MAX = 139;
/** The longest `detail` sent (a card is read at a glance; the rest stays in the result). */
export const DETAIL_MAX = 4_000;
/** The `topic` code system of a concordance card: the CCSR category. */
export const CCSR_TOPIC_SYSTEM = 'https://hcup-us.ahrq.gov/toolssoftware/ccsr/ccs_refined.jsp';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;

/** One line, at most `max` characters (cut with an ellipsis). */
export function clip(value: string, max: number): string {
  const line = value.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1).trimEnd()}…`;
}

/** Markdown-neutral text: the result's words are shown, never interpreted as markup or links. */
function plain(value: string): string {
  return value.replace(/[\\`*_{}[\]<>()#+!|~]/g, (c) => `\\${c}`);
}

function concordanceSummary(result: KeptResult, topic: string): string {
  const { verdict, tally } = readVerdict(result);
  if (tally.total > 0) {
    const parts = [`${tally.discordant} of ${tally.total} guideline recommendations not met`];
    if (tally.insufficient_data > 0) parts.push(`${tally.insufficient_data} lack data`);
    return `${topic}: ${parts.join(', ')}`;
  }
  const words: Record<typeof verdict, string> = {
    concordant: 'care concordant with the guidelines',
    discordant: 'care not concordant with the guidelines',
    insufficient_data: 'not enough data to judge guideline concordance',
    unknown: 'guideline concordance result',
  };
  return `${topic}: ${words[verdict]}`;
}

function concordanceDetail(body: Record<string, unknown>, createdAt: string): string {
  const lines: string[] = [];
  const synthesis = text(body.synthesis) ?? text(body.summary);
  if (synthesis !== undefined) lines.push(plain(synthesis), '');
  const recommendations = Array.isArray(body.recommendations) ? body.recommendations : [];
  for (const r of recommendations.filter(isObject)) {
    const title = text(r.title);
    if (title === undefined) continue;
    const verdict = text(r.verdict);
    const rationale = text(r.rationale);
    lines.push(
      `- **${plain(title)}**${verdict === undefined ? '' : ` (${plain(verdict)})`}` +
        (rationale === undefined ? '' : `: ${plain(rationale)}`),
    );
  }
  lines.push('', `_Result of ${createdAt}._`);
  return lines.join('\n').trim();
}

function preventDetail(body: Record<string, unknown>, createdAt: string): string {
  const lines: string[] = [];
  const recommendations = Array.isArray(body.recommendations) ? body.recommendations : [];
  for (const r of recommendations.filter(isObject)) {
    const description = text(r.description) ?? text(r.factor);
    if (description !== undefined) lines.push(`- ${plain(description)}`);
  }
  lines.push('', `_Result of ${createdAt}._`);
  return lines.join('\n').trim();
}

/**
 * The card of one kept result: its uuid is the result event's id (stable per query, so that
 * feedback names it), the summary and indicator come from the result's verdict (see
 * {@link readVerdict}), the detail from its guideline synthesis (`synthesis`, else `summary`) and
 * recommendations, and the source is the configured one with the CCSR category as topic. Nothing
 * of the patient but the result itself is read.
 */
export function buildCard(
  result: KeptResult,
  source: CardSource,
  describe: (category: string) => string | undefined = () => undefined,
): CdsCard {
  const { indicator } = readVerdict(result);
  const prevent = result.type === 'prevent.completed';
  const body = (prevent ? result.prevent : result.concordance) ?? {};
  const category = result.ccsr_category;
  const description =
    text(body.ccsr_category_description) ?? describe(category) ?? (prevent ? undefined : category);
  let summary: string;
  if (prevent) {
    const count = Array.isArray(body.recommendations) ? body.recommendations.length : 0;
    summary =
      text(body.summary) ??
      `Prevent: ${count} healthy-behaviour recommendation${count === 1 ? '' : 's'}`;
  } else {
    summary = text(body.card_summary) ?? concordanceSummary(result, `${description} (${category})`);
  }
  const detail = clipDetail(
    prevent ? preventDetail(body, result.created_at) : concordanceDetail(body, result.created_at),
  );
  return {
    uuid: result.id,
    summary: clip(summary, SUMMARY_MAX),
    indicator,
    ...(detail === '' ? {} : { detail }),
    source: {
      label: source.label,
      ...(source.url === undefined ? {} : { url: source.url }),
      ...(prevent
        ? {}
        : {
            topic: {
              system: CCSR_TOPIC_SYSTEM,
              code: category,
              ...(description === undefined ? {} : { display: description }),
            },
          }),
    },
  };
}

/** The detail, at most {@link DETAIL_MAX} characters (cut at a line). */
function clipDetail(detail: string): string {
  if (detail.length <= DETAIL_MAX) return detail;
  const cut = detail.slice(0, DETAIL_MAX - 2);
  return `${cut.slice(0, Math.max(cut.lastIndexOf('\n'), 0))}\n…`;
}
