import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../../config/load-config.ts';
import { serviceClientOptions } from '../../config/service-client-options.ts';
import type { RelationshipProjection } from '../../interface/relationship.ts';
import { createServiceClient, type ServiceClient } from '../../service/create-service-client.ts';
import { formatTable } from '../format-table.ts';

interface ListOptions {
  filter?: string;
  search?: string;
  fields?: string;
  total?: boolean;
  offset?: number;
  limit?: number;
  all?: boolean;
  json?: boolean;
}

function integer(min: number) {
  return (raw: string): number => {
    if (!/^-?\d+$/.test(raw) || Number(raw) < min) {
      throw new InvalidArgumentError(`expected a whole number >= ${min}`);
    }
    return Number(raw);
  };
}

function clientFor(program: Command): ServiceClient {
  const config = loadConfig({ file: program.opts<{ config?: string }>().config });
  if (config.service.api_key === undefined) {
    throw new Error('SERVICE_API_KEY is not set: export the API key of the Clinical Graph Service');
  }
  return createServiceClient(serviceClientOptions(config));
}

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

const print = (text: string) => process.stdout.write(`${text}\n`);

/** `concordance-worker relationships get ID | list [...]`. */
export function registerRelationshipsCommand(program: Command): void {
  const relationships = program
    .command('relationships')
    .description('read relationships between clinical concepts from the clinical graph');

  relationships
    .command('get <id>')
    .description('one relationship by id')
    .option('--json', 'print JSON instead of a table')
    .action(async (id: string, opts: { json?: boolean }) => {
      const found = await clientFor(program).relationships.get(id);
      print(opts.json ? JSON.stringify(found, null, 2) : table([found]));
    });

  relationships
    .command('list')
    .description('a page of relationships (every page with --all)')
    .option('--filter <filter>', 'e.g. relationship_id:a||relationship_id:b')
    .option('--search <search>', 'e.g. relationship_id:00042')
    .option('--fields <fields>', 'comma-separated fields to include')
    .option('--total', 'ask for the total count')
    .option('--offset <n>', 'records to skip', integer(0))
    .option('--limit <n>', 'records per page', integer(1))
    .option('--all', 'walk every page')
    .option('--json', 'print JSON instead of a table')
    .action(async (opts: ListOptions) => {
      const client = clientFor(program);
      const params = {
        filter: opts.filter,
        search: opts.search,
        fields: opts.fields,
        include_total: opts.total,
        offset: opts.offset,
        limit: opts.limit,
      };
      if (opts.all) {
        const items: RelationshipProjection[] = [];
        for await (const item of client.relationships.iterate(params)) items.push(item);
        print(opts.json ? JSON.stringify({ data: items }, null, 2) : table(items));
        return;
      }
      const page = await client.relationships.list(params);
      if (opts.json) {
        print(JSON.stringify(page, null, 2));
        return;
      }
      print(table(page.data));
      if (page.total !== undefined) print(`total: ${page.total}`);
    });
}
