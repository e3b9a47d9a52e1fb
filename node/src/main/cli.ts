import { Command } from "commander";

/** The composition root of the `chronofence` command: each subcommand wires its own adapters. */
export async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name("chronofence")
    .description("Distributed task scheduler with a WebAssembly timing wheel")
    .showHelpAfterError();

  program
    .command("demo")
    .description("schedule a few timers on the Wasm wheel and print when they fire")
    .option("--count <n>", "timers to schedule", "5")
    .action(async (opts: { count: string }) => {
      const { runTimerDemo } = await import("./timer-demo.js");
      await runTimerDemo(Number(opts.count));
    });

  await program.parseAsync(argv);
}
