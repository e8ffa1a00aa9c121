#include "flame/pprof_export.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "flame/pprof_profile.pb.h"
#include "zlib.h"

namespace fleetprof::flame {
namespace {

class StringTable {
 public:
  explicit StringTable(pprof::Profile* profile) : profile_(profile) { Index(""); }
  int64_t Index(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, profile_->string_table_size());
    if (inserted) profile_->add_string_table(s);
    return it->second;
  }

 private:
  pprof::Profile* profile_;
  absl::flat_hash_map<std::string, int64_t> index_;
};

absl::StatusOr<std::string> Gzip(const std::string& data) {
  z_stream z{};
  // 15 + 16: a gzip wrapper rather than zlib's.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("pprof export: zlib deflateInit2 failed");
  }
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InternalError("pprof export: zlib deflate failed");
  return out;
}

}  // namespace

absl::StatusOr<std::string> CallTreeToGzippedPprof(const analysis::CallTree& tree) {
  pprof::Profile profile;
  StringTable strings(&profile);
  for (const auto& [type, unit] : {std::pair<const char*, const char*>{"count", "count"},
                                   {"host_self_time", "nanoseconds"},
                                   {"device_time", "nanoseconds"}}) {
    pprof::ValueType* t = profile.add_sample_type();
    t->set_type(strings.Index(type));
    t->set_unit(strings.Index(unit));
  }
  profile.set_default_sample_type(strings.Index("device_time"));
  std::vector<uint64_t> function_of_name(tree.names.size(), 0);
  std::vector<uint64_t> path;  // location ids of the open frames, by depth (the root's unused)
  for (size_t i = 0; i < tree.nodes.size(); ++i) {
    const analysis::CallTreeNode& node = tree.nodes[i];
    path.resize(node.depth);
    path.push_back(i);  // location id i: the root (0) is never a location
    if (node.depth == 0) continue;
    uint64_t& function = function_of_name[node.name];
    if (function == 0) {
      function = static_cast<uint64_t>(profile.function_size()) + 1;
      pprof::Function* f = profile.add_function();
      f->set_id(function);
      f->set_name(strings.Index(tree.names[node.name]));
      f->set_system_name(f->name());
    }
    pprof::Location* location = profile.add_location();
    location->set_id(i);
    location->add_line()->set_function_id(function);
    if (node.count == 0 && node.host_self_ns == 0 && node.device_ns == 0) continue;
    pprof::Sample* sample = profile.add_sample();
    for (size_t d = path.size(); d > 1; --d) sample->add_location_id(path[d - 1]);
    sample->add_value(node.count);
    sample->add_value(node.host_self_ns);
    sample->add_value(node.device_ns);
  }
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) return absl::InternalError("pprof export: profile does not serialize");
  return Gzip(bytes);
}

}  // namespace fleetprof::flame
