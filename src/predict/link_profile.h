/* SPDX-License-Identifier: BSD-3-Clause */
// Link profiles: the named presets a link spec may start from, and the
// spec's text in both directions. A spec travels as text wherever it goes
// (slim-replay --link, slimlinkd --link-config, UCX_SLIM_LINK_PROFILE, the
// node service's reply to a rank), so every reader parses it the same way
// and a new key needs no new wire format.
#pragma once

#include "predict/link_model.h"

#include <string>
#include <vector>

namespace slim::link {

struct LinkPreset {
    const char *name;    // "ib-hdr"
    const char *spec;    // its keys, as parse_link_config reads them
    const char *source;  // where the figures come from, for --help and man pages
};

// Every preset, in the order help texts list them.
const std::vector<LinkPreset>& link_presets();

// "ib-qdr, ib-edr, ..." for messages that list what is accepted.
std::string preset_names();

// The spec that parse_link_config turns back into `config`, every key
// written out: "ib-hdr,L=4,P=0.5,low=1,tau=10us,lowP=0.43".
std::string link_spec(const LinkConfig& config);

}  // namespace slim::link
