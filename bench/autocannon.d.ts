/** The part of autocannon's API the ingest benchmark uses (the package ships no types). */
declare module "autocannon" {
  interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    timeout?: number;
    workers?: number;
  }
  interface Histogram {
    average: number;
    p50: number;
    p90: number;
    p99: number;
    max: number;
  }
  interface Result {
    "2xx": number;
    non2xx: number;
    errors: number;
    timeouts: number;
    duration: number;
    latency: Histogram;
    requests: Histogram & { total: number; sent: number };
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
