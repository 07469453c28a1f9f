// One double from a root rank to every rank of a group, bit for bit (as two i32 elements, so no
// reduction or conversion touches it): how a pipeline's last stage gives its loss to the stages
// that did not compute it (chapter 08's trainer, chapter 10's 5D trainer). Collective over comm;
// `value` matters on root only. The tensor lives on comm's device, as the group's tensors must.
#pragma once
#include "common/comm/communicator.hpp"

namespace usp {

double broadcast_double(Communicator& comm, int root, double value);

}  // namespace usp
