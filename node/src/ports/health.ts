/** A dependency that readiness checks (Postgres, Redis). Rejects when not ready. */
export interface HealthCheck {
  name: string;
  check(): Promise<void>;
}
