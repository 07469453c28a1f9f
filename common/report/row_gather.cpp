#include "common/report/row_gather.hpp"

#include <stdexcept>
#include <string>

#include "common/tensor.hpp"

namespace usp::report {

std::vector<std::byte> gather_bytes(Communicator& comm, const void* mine, std::size_t bytes) {
  // Tensors have no byte type: the bytes travel as i32 words, the last one padded with zeros.
  const std::size_t words = (bytes + 3) / 4;
  const auto n = static_cast<std::int64_t>(words);
  Tensor in = Tensor::empty({n}, DType::i32, MemCategory::Temporary);
  if (words > 0) std::memset(in.data<std::int32_t>(), 0, words * 4);
  if (bytes > 0) std::memcpy(in.data<std::int32_t>(), mine, bytes);
  Tensor out = Tensor::empty({comm.size() * n}, DType::i32, MemCategory::Temporary, comm.device());
  comm.all_gather(on_device(in, comm.device()), out);
  const Tensor got = on_device(out, Device::cpu());
  const auto* words_in = reinterpret_cast<const std::byte*>(got.data<std::int32_t>());
  std::vector<std::byte> all(static_cast<std::size_t>(comm.size()) * bytes);
  for (std::size_t r = 0; bytes > 0 && r < static_cast<std::size_t>(comm.size()); ++r)
    std::memcpy(all.data() + r * bytes, words_in + r * words * 4, bytes);
  return all;
}

namespace {

// A row as bytes: per cell its kind (the Value's index), then the value (a text or a list: its
// length first).
template <class T>
void put(std::vector<std::byte>& out, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

template <class T>
T take(const std::vector<std::byte>& in, std::size_t& at) {
  if (at + sizeof(T) > in.size()) throw std::logic_error("add_every_rank_row: a row's bytes end early");
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  at += sizeof(T);
  return v;
}

std::vector<std::byte> encode(const std::vector<Value>& row) {
  std::vector<std::byte> out;
  for (const Value& cell : row) {
    put(out, static_cast<std::uint8_t>(cell.index()));
    if (const auto* i = std::get_if<std::int64_t>(&cell)) put(out, *i);
    if (const auto* d = std::get_if<double>(&cell)) put(out, *d);
    if (const auto* b = std::get_if<bool>(&cell)) put(out, static_cast<std::uint8_t>(*b));
    if (const auto* s = std::get_if<std::string>(&cell)) {
      put(out, static_cast<std::int64_t>(s->size()));
      const auto* p = reinterpret_cast<const std::byte*>(s->data());
      out.insert(out.end(), p, p + s->size());
    }
    if (const auto* list = std::get_if<std::vector<double>>(&cell)) {
      put(out, static_cast<std::int64_t>(list->size()));
      for (double d : *list) put(out, d);
    }
  }
  return out;
}

std::vector<Value> decode(const std::vector<std::byte>& in) {
  std::vector<Value> row;
  for (std::size_t at = 0; at < in.size();) {
    switch (take<std::uint8_t>(in, at)) {
      case 0: row.emplace_back(take<std::int64_t>(in, at)); break;
      case 1: row.emplace_back(take<double>(in, at)); break;
      case 2: {
        const auto n = static_cast<std::size_t>(take<std::int64_t>(in, at));
        if (at + n > in.size()) throw std::logic_error("add_every_rank_row: a text's bytes end early");
        row.emplace_back(std::string(reinterpret_cast<const char*>(in.data() + at), n));
        at += n;
        break;
      }
      case 3: row.emplace_back(take<std::uint8_t>(in, at) != 0); break;
      case 4: {
        std::vector<double> list(static_cast<std::size_t>(take<std::int64_t>(in, at)));
        for (double& d : list) d = take<double>(in, at);
        row.emplace_back(std::move(list));
        break;
      }
      default: throw std::logic_error("add_every_rank_row: a cell of unknown kind");
    }
  }
  return row;
}

}  // namespace

void add_every_rank_row(Communicator& comm, Table& table, const std::vector<Value>& mine) {
  static_assert(std::variant_size_v<Value> == 5, "add_every_rank_row: encode and decode every kind of Value");
  for (const std::vector<std::byte>& row : gather_row_lists(comm, encode(mine))) table.add(decode(row));
}

}  // namespace usp::report
