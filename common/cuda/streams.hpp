// The streams of a rank's GPU work.
//
// Compute: every kernel, cuBLAS call and tensor copy of the core runs on one compute stream, so
// they execute in issue order without any event bookkeeping. For now that stream is the legacy
// default stream (cudaStreamLegacy): the plain cudaMemcpy/cudaMemset calls behind
// usp::cuda::copy/zero and a kernel launched with no stream argument all land on it. Naming it
// explicitly (rather than 0) keeps that true even if a file is ever compiled with
// --default-stream per-thread, since the legacy stream synchronises with every blocking stream.
//
// Communication: the NCCL backend owns separate non-blocking streams per communicator. An op
// records an event on compute_stream() and makes its communication stream wait on it (so the
// collective sees the data as computed so far), and Work::wait() makes compute_stream() wait on
// the op's completion event (so later compute sees the result). Compute issued between the op
// and its wait() overlaps the communication.
//
// Memory: usp::cuda::malloc/free are stream-ordered on compute_stream() (cudaMallocAsync /
// cudaFreeAsync). Work on any other stream that touches a tensor must therefore start after an
// event recorded on compute_stream() once the tensor exists, and the compute stream must wait
// for that work before the tensor is released; the NCCL backend does both for its buffers.
#pragma once
#include <cuda_runtime.h>

namespace usp::cuda {

inline cudaStream_t compute_stream() { return cudaStreamLegacy; }

}  // namespace usp::cuda
