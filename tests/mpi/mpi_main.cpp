// Catch2 runner for the mpirun tests: MPI_Init before the session, MPI_Finalize after it; the
// exit code is non-zero on every rank if any rank failed. Only rank 0 prints the summary of a
// passing run (every rank prints its own failures).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Catch::Session session;
  int failed = session.applyCommandLine(argc, argv);
  if (failed == 0) failed = session.run();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any != 0 ? 1 : 0;
}
