// Rung 04, 1-D block tiling. Changes from rung 03: each thread computes 8 elements of a column
// of C instead of 1, in a 64×64 block tile whose K dimension is walked 8 at a time.
// Why faster: each value of B a thread reads from shared memory stays in a register and feeds 8
// FMAs: 9 shared-memory loads per 8 FMAs, where rung 03 needed 2 per FMA.
//
// The thread's work is exercise 11.2's body with another tile shape, smem_tiling_thread<Rung04Tile>
// (chapters/11_gpu_primer/smem_tiling.hpp): rung 03 with thread coarsening is the same algorithm,
// with the same kernel and launch (smem_tiling_launch.cuh).
// Compiled into chapter 11's library, once per variant, like rungs 02 and 03.
//
// Block: 512 threads for a BM×BN = 64×64 tile of C; the K dimension is walked BK = 8 at a time.
//   shared As: BM×BK = 64×8 floats (A[row0 .. +64][k0 .. +8])
//   shared Bs: BK×BN = 8×64 floats (B[k0 .. +8][col0 .. +64])
// Thread t loads one element of each tile, then, as thread (ty, tx) = (t/64, t%64), computes
// C[row0 + ty·8 + i][col0 + tx] for i = 0..7: per step k it reads one value of Bs (kept in a
// register) and 8 of As (the same 8 for the whole warp: a broadcast), for 8 FMAs.
// The 8 accumulators live in registers.
#include "kernels/matmul/rungs.hpp"
#include "kernels/matmul/smem_tiling_launch.cuh"

namespace usp::matmul {

static_assert(ch11::Rung04Tile::kThreads == ch11::Rung04Tile::BM * ch11::Rung04Tile::BK &&
                  ch11::Rung04Tile::kThreads == ch11::Rung04Tile::BK * ch11::Rung04Tile::BN,
              "each thread loads one element of As and of Bs");

// Preconditions: those of check_gemm (gemm.hpp); nothing else (edges are guarded).
void matmul_04_blocktiling_1d(const GemmF32& g) {
  launch_smem_tiling<ch11::Rung04Tile>(g, "matmul_04_blocktiling_1d");
}

}  // namespace usp::matmul
