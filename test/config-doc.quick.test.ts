// docs/config.md is generated from the config's zod schema (scripts/config-doc.ts): it fails here when
// the schema changed and the reference was not regenerated.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../pipeline/config/index.ts';
import { CONFIG_DOC, configReference } from '../scripts/config-doc.ts';

describe('docs/config.md', () => {
  it('is what scripts/config-doc.ts generates from the schema (run it after changing the config schema)', async () => {
    expect(await readFile(CONFIG_DOC, 'utf8')).toBe(configReference());
  });

  it('lists every top-level field of the schema, with its default', () => {
    const doc = configReference();
    for (const key of Object.keys(configSchema.shape)) expect(doc).toContain(`| \`${key}\` |`);
    expect(doc).toMatch(/\| `render\.metatile` \| integer 1–16 \| {2}\| `4` \|/);
  });
});
