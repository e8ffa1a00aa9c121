#pragma once
// Tokens are stored only as their SHA-256 (lowercase hex), so the tokens file reveals no
// credential. `sha256sum` and `openssl dgst -sha256` print the same digest.

#include <string>
#include <string_view>

namespace fleetprof {

std::string Sha256Hex(std::string_view bytes);

// Equal-length comparison that does not stop at the first difference.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace fleetprof
