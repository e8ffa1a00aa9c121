#pragma once
// How an Nsight Systems export names what it recorded (docs/analysis.md, Nsight Systems): the
// rules the SQLite reader applies to CUDA calls, copies and NVTX ranges. Pure functions.

#include <cstdint>
#include <string>
#include <string_view>

namespace fleetprof::analysis {

// A CUDA call's name without a trailing `_v<digits>`: `cudaLaunchKernel_v7000` →
// `cudaLaunchKernel`. Other names are returned as they are.
std::string_view StripCudaVersionSuffix(std::string_view name);

// The label of a copy's `copyKind` when the export has no ENUM_CUDA_MEMCPY_OPER table: CUDA's
// fixed list (1 Host-to-Device, 2 Device-to-Host, …), `Unknown` for any other value.
std::string_view FixedMemcpyKindLabel(int64_t copy_kind);

// A copy's name: `[CUDA memcpy <label>]`.
std::string MemcpyName(std::string_view label);
inline constexpr std::string_view kMemsetName = "[CUDA memset]";

// Where the op breakdown cuts a range name that PyTorch's `emit_nvtx` wrote
// (`aten::mm, op_id = 7`, `aten::add, seq = 3, sizes = [[2, 3]]`): the length of the part before
// the first `, seq = `, `, op_id = `, `, sizes = ` or `, input_op_ids = `; the whole length when
// none occurs.
size_t EmitNvtxOpNameLength(std::string_view name);

}  // namespace fleetprof::analysis
