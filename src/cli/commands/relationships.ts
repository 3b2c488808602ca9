import type { Command } from 'commander';
import type { RelationshipProjection } from '../../interface/relationship.ts';
import { CliInputError } from '../cli-errors.ts';
import { note, respond } from '../command-output.ts';
import { describeProblems } from '../describe-error.ts';
import { formatTable } from '../format-table.ts';
import { wholeNumber } from '../option-parsers.ts';
import { serviceContext } from '../service-context.ts';

interface ListOptions {
  filter?: string;
  search?: string;
  fields?: string;
  sort?: string;
  total?: boolean;
  offset?: number;
  limit?: number;
  all?: boolean;
  pageSize?: number;
  json?: boolean;
}

/** The page size of `--all` unless `--page-size` (or `--limit`) says otherwise. */
export const DEFAULT_PAGE_SIZE = 1000;

const concept = (c: RelationshipProjection['from_concept']) =>
  c ? `${c.preferred_name ?? '?'} (${c.cui ?? '-'})` : '';

function table(items: readonly RelationshipProjection[]): string {
  return formatTable(
    ['relationship_id', 'from', 'to', 'studies', 'findings', 'last published'],
    items.map((r) => [
      r.relationship_id ?? '',
      concept(r.from_concept),
      concept(r.to_concept),
      String(r.metadata?.num_studies ?? ''),
      String(r.metadata?.num_findings ?? ''),
      r.metadata?.last_published_date?.slice(0, 10) ?? '',
    ]),
  );
}

/** With `--all`, `--limit` is the page size (as it always was); both at once is ambiguous. */
function pageSizeOf(opts: ListOptions): number {
  if (opts.pageSize !== undefined && opts.limit !== undefined) {
    throw new CliInputError('--all takes --page-size or --limit (the page size), not both');
  }
  return opts.pageSize ?? opts.limit ?? DEFAULT_PAGE_SIZE;
}

/** `concordance-worker relationships get ID | list [...]`. */
export function registerRelationshipsCommand(program: Command): void {
  const relationships = program
    .command('relationships')
    .description('read relationships between clinical concepts from the clinical graph');

  relationships
    .command('get <id>')
    .description('one relationship by id')
    .option('--json', 'print JSON instead of a table')
    .action((id: string, opts: { json?: boolean }) =>
      respond(opts.json, async () => {
        const found = await serviceContext(program).client.relationships.get(id);
        return { json: found, text: table([found]) };
      }),
    );

  relationships
    .command('list')
    .description('a page of relationships (every page with --all)')
    .option('--filter <filter>', 'e.g. relationship_id:a||relationship_id:b')
    .option('--search <search>', 'e.g. relationship_id:00042')
    .option('--fields <fields>', 'comma-separated fields to include')
    .option('--sort <field:dir>', 'sent as given (the service supports no sort field today)')
    .option('--total', 'ask for the total count')
    .option('--offset <n>', 'records to skip', wholeNumber(0))
    .option('--limit <n>', 'records per page (with --all: the page size)', wholeNumber(1))
    .option('--all', 'walk every page')
    .option(
      '--page-size <n>',
      `with --all: records per request (default ${DEFAULT_PAGE_SIZE}); halved while the service refuses it`,
      wholeNumber(1),
    )
    .option('--json', 'print JSON instead of a table')
    .action((opts: ListOptions) =>
      respond(opts.json, async () => {
        const params = {
          filter: opts.filter,
          search: opts.search,
          fields: opts.fields,
          sort: opts.sort,
          include_total: opts.total,
          offset: opts.offset,
        };
        if (opts.all) {
          const limit = pageSizeOf(opts);
          const { client } = serviceContext(program);
          const items: RelationshipProjection[] = [];
          const walk = client.relationships.iterate(
            { ...params, limit },
            {
              onPageSizeRefused: (refused, next, error) =>
                note(
                  `the service refused a page size of ${refused} (${describeProblems(error.items)}); asking for ${next}`,
                ),
            },
          );
          for await (const item of walk) items.push(item);
          return { json: { data: items }, text: table(items) };
        }
        if (opts.pageSize !== undefined) throw new CliInputError('--page-size needs --all');
        const page = await serviceContext(program).client.relationships.list({
          ...params,
          limit: opts.limit,
        });
        const text = table(page.data);
        return {
          json: page,
          text: page.total === undefined ? text : `${text}\ntotal: ${page.total}`,
        };
      }),
    );
}
