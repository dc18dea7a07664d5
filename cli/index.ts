/**
 * The tilebake command line: one yargs program, one file per command in cli/commands/. The CLI is the
 * only code that imports both the pipeline (build, update, the distributed run) and the server (serve,
 * export, usage); each command loads what it runs on use, so `--help` loads neither.
 */
import yargs, { type Argv } from 'yargs';
import { isUserError } from '../lib/errors.ts';
import { isStoreError } from '../lib/store-read.ts';
import { addBuildCommand } from './commands/build.ts';
import { addElevationCommand } from './commands/elevation.ts';
import { addExportCommand } from './commands/export.ts';
import { addInspectCommand } from './commands/inspect.ts';
import { addMergeCommand } from './commands/merge.ts';
import { addPackApplyCommand } from './commands/pack-apply.ts';
import { addPackCommand } from './commands/pack.ts';
import { runCommands } from './commands/run.ts';
import { addServeCommand } from './commands/serve.ts';
import { updateCommand } from './commands/update.ts';
import { usageCommand } from './commands/usage.ts';
import { addVectorCommand } from './commands/vector.ts';

/** The commands in the order `--help` lists them. */
const COMMANDS: ReadonlyArray<(y: Argv) => Argv> = [
  addBuildCommand,
  addVectorCommand,
  addInspectCommand,
  addElevationCommand,
  addMergeCommand,
  (y) => y.command(runCommands),
  addServeCommand,
  addExportCommand,
  addPackCommand,
  addPackApplyCommand,
  (y) => y.command(usageCommand),
  (y) => y.command(updateCommand),
];

/** The yargs program; exported for tests of the command-line contract. */
export function program(argv: string[]): Argv {
  let y: Argv = yargs(argv)
    .scriptName('tilebake')
    .usage('$0 <command> [options]\n\nBake vector, raster and elevation outputs ahead of time, then serve them.');
  for (const add of COMMANDS) y = add(y);
  return y
    .demandCommand(1, 'Name a command (see --help).')
    .strict()
    .help()
    .alias('help', 'h')
    .version(false)
    .wrap(Math.min(110, process.stdout.columns || 110));
}

/** Run the CLI; user errors print one message and exit non-zero, without a stack trace. */
export async function main(argv: string[]): Promise<void> {
  try {
    await program(argv)
      .fail((msg, err) => {
        if (err) throw err;
        process.stderr.write(`tilebake: ${msg}\nRun with --help for usage.\n`);
        process.exit(2);
      })
      .parseAsync();
  } catch (e) {
    if (isUserError(e)) {
      process.stderr.write(`tilebake: ${e.message}\n`);
      process.exit(e.exitCode);
    }
    if (isStoreError(e)) {
      // An unreachable or failing store: the message names the URL or file and the cause.
      process.stderr.write(`tilebake: ${e.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`tilebake: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  }
}
