import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConcordanceError, isConcordanceError } from './concordance-error.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every source file of the product (not its tests). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

interface Declared {
  file: string;
  name: string;
  base: string;
}

/** The exported error classes, as the source declares them. */
function exportedErrorClasses(): Declared[] {
  const found: Declared[] = [];
  for (const file of [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'workers'))]) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/export (?:abstract )?class (\w+Error) extends (\w+)/g)) {
      found.push({ file: relative(ROOT, file), name: m[1] ?? '', base: m[2] ?? '' });
    }
  }
  return found;
}

describe('the error family', () => {
  const declared = exportedErrorClasses();

  it('finds the error classes (the scan works)', () => {
    expect(declared.map((d) => d.name)).toEqual(
      expect.arrayContaining(['ServiceError', 'IngestHttpError', 'ConfigError', 'StartupError']),
    );
  });

  it('has no exported error class outside the family', async () => {
    const outside: string[] = [];
    for (const { file, name } of declared) {
      if (name === 'ConcordanceError') continue;
      const module = (await import(pathToFileURL(join(ROOT, file)).href)) as Record<
        string,
        unknown
      >;
      const cls = module[name] as { prototype: unknown } | undefined;
      if (cls === undefined || !(cls.prototype instanceof ConcordanceError)) {
        outside.push(`${file}: ${name}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('gives every concrete class a stable ERR_ code, one class per code', async () => {
    const byCode = new Map<string, string[]>();
    const missing: string[] = [];
    for (const { file, name } of declared) {
      const module = (await import(pathToFileURL(join(ROOT, file)).href)) as Record<
        string,
        { code?: unknown } | undefined
      >;
      const code = module[name]?.code;
      if (typeof code === 'string') {
        byCode.set(code, [...(byCode.get(code) ?? []), name]);
        continue;
      }
      // Abstract bases, and WebhookDeliveryError (its code is one of WebhookFailureCode).
      const text = readFileSync(join(ROOT, file), 'utf8');
      if (!/abstract class/.test(text) && !/'ERR_[A-Z0-9_]+'/.test(text)) missing.push(name);
    }
    expect(missing).toEqual([]);
    for (const [code, names] of byCode) {
      expect(code, names.join()).toMatch(/^ERR_[A-Z0-9]+(?:_[A-Z0-9]+)*$/);
      expect(names, code).toHaveLength(1);
    }
  });

  it('carries the cause it was given, and its name', () => {
    class ProbeError extends ConcordanceError {
      readonly code = 'ERR_PROBE';
    }
    const cause = new Error('underneath');
    const err = new ProbeError('on top', { cause });
    expect(err.cause).toBe(cause);
    expect(err.name).toBe('ProbeError');
    expect(isConcordanceError(err)).toBe(true);
    expect(isConcordanceError(new Error('plain'))).toBe(false);
    expect(isConcordanceError(Object.assign(new Error('copy'), { code: 'ERR_COPY' }))).toBe(true);
  });
});
