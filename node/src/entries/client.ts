/** Package entry `chronofence/client`: the typed client of the HTTP API (node/src/client/). */
export {
  ChronofenceClient,
  type ClientOptions,
  ExecutionCalls,
  ScheduleCalls,
  TaskCalls,
  WorkflowCalls,
} from "../client/client.js";
export { ChronofenceApiError } from "../client/errors.js";
export type * from "../client/types.js";
