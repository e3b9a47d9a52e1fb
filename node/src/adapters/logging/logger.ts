import { type Logger, pino } from "pino";

export type { Logger };

export interface LoggerOptions {
  level: string;
  name: string;
}

/** JSON logs on stderr (stdout is kept for command output such as a new API key). */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    { name: options.name, level: options.level },
    pino.destination({ fd: 2, sync: false }),
  );
}
