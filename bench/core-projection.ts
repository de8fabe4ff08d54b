// What a machine with more cores would reach, from the CPU the lane's processes spent per delivery on this one:
// arithmetic for the scale-out scenario's report, not a measurement.

/** What the report projects to: machines with this many cores. */
export const PROJECTED_CORES = [8, 16] as const;

/** A machine of `cores` cores, PostgreSQL on cores of its own: the best split, from CPU per delivery alone. */
export interface CoreProjection {
  cores: number;
  /** Lane workers, a core each. */
  workers: number;
  postgresCores: number;
  deliveriesPerSecond: number;
  boundBy: "the workers" | "PostgreSQL";
}

/** The projection from one reading of PostgreSQL's CPU per delivery. */
export interface Projection {
  basis: "the PostgreSQL server's processes" | "the lane's sessions";
  /** The CPU per delivery it starts from, in µs: the workers' together (W) and PostgreSQL's (P). */
  workerCpuUs: number;
  postgresCpuUs: number;
  machines: CoreProjection[];
}

/** The projection to each of PROJECTED_CORES from one reading of the CPU per delivery. */
export function project(basis: Projection["basis"], workerCpuUs: number, postgresCpuUs: number): Projection {
  return {
    basis,
    workerCpuUs,
    postgresCpuUs,
    machines: PROJECTED_CORES.map((cores) => projectCores(cores, workerCpuUs, postgresCpuUs)),
  };
}

/**
 * What a machine of `cores` cores would reach if PostgreSQL had cores of its own and the lane workers the rest,
 * a core each, and each process kept spending per delivery what it spent here: the split of whole cores whose
 * bound, min(workers / W, PostgreSQL's cores / P) with W and P the CPU per delivery, is highest. It assumes
 * that nothing else (disk, network, the subscribers, which live elsewhere) binds and that CPU per delivery does
 * not grow with more workers: a projection.
 */
function projectCores(cores: number, workerCpuUs: number, postgresCpuUs: number): CoreProjection {
  let best: CoreProjection | undefined;
  for (let workers = 1; workers < cores; workers++) {
    const byWorkers = (workers * 1e6) / workerCpuUs;
    const byPostgres = ((cores - workers) * 1e6) / postgresCpuUs;
    const deliveriesPerSecond = Math.min(byWorkers, byPostgres);
    if (best && !(deliveriesPerSecond > best.deliveriesPerSecond)) continue;
    best = {
      cores,
      workers,
      postgresCores: cores - workers,
      deliveriesPerSecond,
      boundBy: byWorkers <= byPostgres ? "the workers" : "PostgreSQL",
    };
  }
  return best!;
}
