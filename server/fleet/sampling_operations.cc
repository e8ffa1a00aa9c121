#include "server/fleet/sampling_operations.h"

namespace fleetprof {

void AddSamplingOperations(Sampler* sampler, Operations* ops) {
  using namespace v1;  // NOLINT: the message names read as in the .proto files
  ops->AddUnary<SetSamplingRequest, SamplingStatus>(
      "fleetprof.v1.SamplingService.SetSampling",
      [sampler](const SetSamplingRequest& r, const Principal& caller) { return sampler->Set(r, caller); });
  ops->AddUnary<GetSamplingRequest, SamplingStatus>("fleetprof.v1.SamplingService.GetSampling",
                                                    [sampler](const auto&) { return sampler->Get(); });
  ops->AddUnary<DisableSamplingRequest, SamplingStatus>("fleetprof.v1.SamplingService.DisableSampling",
                                                        [sampler](const auto&) { return sampler->Disable(); });
}

}  // namespace fleetprof
