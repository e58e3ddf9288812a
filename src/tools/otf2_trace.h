// SPDX-License-Identifier: BSD-3-Clause
// OTF2 archives (the trace format Score-P writes) as event streams, so that
// slim-replay replays real applications' traces:
//
//   slim-replay --events run/scorep-trace/traces.otf2 [--location N] ...
//
// Built into slim-replay and the unit tests only: the preloaded libslimlink
// must not depend on OTF2. The mapping, also in slim-replay(1) ("OTF2 archives"):
//
// - One location (an OTF2 location: a thread of a rank) is one stream.
//   --location N names it by its OTF2 location id (as otf2-print shows it;
//   Score-P gives the master thread of MPI rank R the id R). The default is
//   the first member of the archive's MPI locations group (Score-P lists the
//   ranks' master threads there in rank order: rank 0), or the lowest
//   location id when there is no such group.
// - One event per instance (Enter .. Leave) of an MPI communication region:
//   a region of paradigm MPI whose role is point-to-point, a collective
//   (one-to-all, all-to-one, all-to-all, other) or a barrier; or one named
//   MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome (where nonblocking
//   transfers complete; Score-P gives them the role "function"); or one named
//   MPI_Test, MPI_Testall, MPI_Testany, MPI_Testsome that completed a request
//   (an MpiIsendComplete or MpiIrecv record inside it) -- a polling loop's
//   failed tests are not traffic. Other MPI regions (MPI_Init,
//   MPI_Comm_rank, one-sided calls) and non-MPI regions give no event.
// - Nested regions: only the outermost MPI communication region counts; MPI
//   records inside regions nested in it count for it. Records outside any
//   such region are ignored, and a region still open at the end of the
//   location's events (a truncated trace) gives no event.
// - start_ns / end_ns: the Enter / Leave timestamps, converted with the
//   ClockProperties definition: (ticks - globalOffset) * 10^9 /
//   timerResolution, rounded down.
// - bytes: the bytes this location sent and received in the region: the
//   msgLength of MpiSend, MpiIsend, MpiRecv and MpiIrecv records plus
//   sizeSent + sizeReceived of MpiCollectiveEnd records; 0 when it has none
//   (an MPI_Irecv, a wait for a send, a barrier). packed_bytes is 0.
// - id: the same for the same MPI function (the region's name; OTF2 regions
//   are functions, not call sites) with the same partners: the set of
//   (communicator, peer) pairs of its records, the peer being the receiver
//   or sender rank of a point-to-point record (a completed MPI_Isend's from
//   its MpiIsend record) and the root of a collective (undefined for rootless
//   ones). Ids are numbered from 1 in order of first appearance in the
//   stream: stable for one archive and location, not across locations.
//
// libotf2 is not safe on damaged archives (it reads memory it never filled
// when a chunk's records run past its end), so read_otf2 runs it in a child
// process (isolated_call.h): a crash there is reported as an error about
// the archive, and the child's address space is capped (a damaged count must
// not make it allocate gigabytes).
//
// The stream is read into memory (40 bytes per event: 10^7 MPI calls on one
// rank take 400 MB), so an archive's errors stop slim-replay before it
// prints anything.
#pragma once

#include "trace/trace.h"
#include "predict/types.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace slim::tools {

struct Otf2Location {
    std::uint64_t id = 0;
    std::string name;   // e.g. "Master thread"
    std::string group;  // its location group, e.g. "MPI Rank 0"
    bool mpi = false;   // in the archive's MPI locations group
};

struct Otf2Stream {
    Otf2Location location;                // whose events these are
    std::vector<predict::Event> events;   // in the order of the trace
    std::vector<Otf2Location> locations;  // all of the archive's, by id
};

// True when `path` names an OTF2 anchor file: it ends in ".otf2".
bool is_otf2_anchor(std::string_view path);

// The events of one location of the archive whose anchor file is `anchor`
// (mapping above). `location` is --location's text: an OTF2 location id, or
// empty for the default. Throws predict::TraceError naming `anchor` when the
// file is missing or not an OTF2 archive, when the archive cannot be read,
// and when `location` is not one of its locations (the message lists them).
// The events are not checked against the trace rules here: TraceReader does.
Otf2Stream read_otf2(const std::string& anchor, const std::string& location);

// The same, with libotf2 in this process and no address-space cap: for the
// fuzzer, which needs libotf2's and the callbacks' coverage in its own
// process. `memory_budget` (bytes, 0: none) is only named in the message
// when an allocation fails.
Otf2Stream read_otf2_here(const std::string& anchor, const std::string& location,
                          std::uint64_t memory_budget);

// slim-replay's --events FILE: an OTF2 anchor file read with read_otf2(), or
// a text trace (TraceReader). `location` must be empty for a text trace.
std::unique_ptr<predict::TraceReader> open_trace(const std::string& path,
                                                 const std::string& location);

}  // namespace slim::tools
