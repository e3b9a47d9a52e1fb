/** Tells the dispatcher holding a task that it was cancelled (best effort: the worker's fenced start is the guarantee). */
export interface CancelNotifier {
  cancelled(tenantId: string, taskId: string): Promise<void>;
}
