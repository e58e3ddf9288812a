// SPDX-License-Identifier: BSD-3-Clause
#include "otf2_trace.h"

#include "base/error.h"
#include "isolated_call.h"

#include <nlohmann/json.hpp>

#include <otf2/otf2.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include <filesystem>
#include <fstream>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace slim::tools {

using predict::Event;
using predict::EventId;
using predict::TimeNs;
using predict::TraceError;

namespace {

// A name from the archive (location, group, region), as messages show it:
// archives come from elsewhere, and a name with terminal escape sequences
// must not retitle, clear or recolour the user's terminal. Escaped as text
// traces' bytes are; long enough for any real name.
std::string shown(std::string_view name) { return predict::escape_for_message(name, 200); }

// An error found inside an OTF2 callback. Callbacks are called from C: they
// return OTF2_CALLBACK_INTERRUPT instead of throwing, and the reader throws
// once OTF2 has returned.
class Interrupt : public Error {
public:
    using Error::Error;
};

// OTF2 reports errors through a process-wide callback (by default it prints
// them). While a reader is open, the first message is kept for ours.
class Otf2Messages {
public:
    Otf2Messages() { previous_ = OTF2_Error_RegisterCallback(&Otf2Messages::on_error, this); }
    ~Otf2Messages() { OTF2_Error_RegisterCallback(previous_, nullptr); }
    Otf2Messages(const Otf2Messages&)            = delete;
    Otf2Messages& operator=(const Otf2Messages&) = delete;

    // ": MESSAGE" or "" when OTF2 said nothing.
    // OTF2's messages may quote bytes of the archive: escaped like its names.
    // When an allocation failed under the address-space cap, it says so:
    // a real archive of this size cannot need that much.
    std::string detail() const
    {
        if (first_.empty()) return std::string();
        std::string text = ": " + shown(first_);
        if (allocation_failed_ && budget_ != 0) {
            text += " (the archive asks for more memory than " + std::to_string(budget_ >> 20) +
                    " MiB, more than one of its size can need: it is damaged)";
        }
        return text;
    }
    void set_memory_budget(std::uint64_t bytes) { budget_ = bytes; }
    // Forgets a message about something that was allowed to fail.
    void clear() { first_.clear(); }

private:
    static OTF2_ErrorCode on_error(void *self, const char *, uint64_t, const char *,
                                   OTF2_ErrorCode code, const char *format, va_list args)
    {
        auto& messages = *static_cast<Otf2Messages *>(self);
        if (code == OTF2_ERROR_MEM_ALLOC_FAILED || code == OTF2_ERROR_ENOMEM) {
            messages.allocation_failed_ = true;
        }
        if (messages.first_.empty()) {
            char text[512];
            std::vsnprintf(text, sizeof text, format, args);
            // The description says why ("No such file or directory" for
            // "POSIX: 'traces.def'").
            const char *const why = OTF2_Error_GetDescription(code);
            messages.first_       = text[0] == '\0' ? why : std::string(text) + " (" + why + ")";
        }
        return code;
    }

    OTF2_ErrorCallback previous_ = nullptr;
    std::string first_;
    std::uint64_t budget_   = 0;
    bool allocation_failed_ = false;
};

// libotf2 allocates by counts it reads from the archive before it can check
// them against anything: an anchor file of 72 bytes whose property count was
// damaged to 620 million made OTF2_Reader_Open() calloc 9.9 GB, then walk the
// array for 44 s at 9.7 GB resident before it failed. While an archive is
// read, the address space is capped at what the process had plus a budget
// that a real archive of this size cannot need, so such an allocation fails
// at once and OTF2 reports it. The cap is process-wide, so read_otf2 sets it
// in the child process that reads the archive (isolated_call.h), where it
// limits nothing else.
class AddressSpaceCap {
public:
    explicit AddressSpaceCap(std::uint64_t budget) : budget_(budget)
    {
        const std::uint64_t in_use = address_space_in_use();
        if (in_use == 0 || ::getrlimit(RLIMIT_AS, &previous_) != 0) return;
        const std::uint64_t cap = in_use + budget;
        if (previous_.rlim_cur != RLIM_INFINITY && previous_.rlim_cur <= cap) return;
        rlimit lowered   = previous_;
        lowered.rlim_cur = cap;
        active_          = ::setrlimit(RLIMIT_AS, &lowered) == 0;
    }
    ~AddressSpaceCap()
    {
        if (active_) ::setrlimit(RLIMIT_AS, &previous_);
    }
    AddressSpaceCap(const AddressSpaceCap&)            = delete;
    AddressSpaceCap& operator=(const AddressSpaceCap&) = delete;

    bool active() const { return active_; }
    std::uint64_t budget() const { return budget_; }

private:
    // The process's virtual size (the first field of /proc/self/statm, in
    // pages); 0 when it cannot be read, and then nothing is capped.
    static std::uint64_t address_space_in_use()
    {
        std::ifstream statm("/proc/self/statm");
        std::uint64_t pages = 0;
        if (!(statm >> pages)) return 0;
        const long page = ::sysconf(_SC_PAGESIZE);
        return page > 0 ? pages * static_cast<std::uint64_t>(page) : 0;
    }

    std::uint64_t budget_;
    rlimit previous_{};
    bool active_ = false;
};

// Bytes of the archive whose anchor file is `anchor` (DIR/NAME.otf2): the
// anchor, DIR/NAME.def and every file under DIR/NAME/.
std::uint64_t archive_bytes(const std::string& anchor)
{
    namespace fs = std::filesystem;
    const fs::path path(anchor);
    const fs::path stem = path.parent_path() / path.stem();
    std::uint64_t total = 0;
    // A file that cannot be sized (gone, unreadable) adds nothing and does
    // not end the walk: the walk has its own error code.
    const auto add = [&total](const fs::path& file) {
        std::error_code ec;
        const auto size = fs::file_size(file, ec);
        if (!ec) total += size;
    };
    add(path);
    add(fs::path(stem).concat(".def"));
    std::error_code walk;
    for (fs::recursive_directory_iterator it(stem, walk), end; !walk && it != end;
         it.increment(walk)) {
        std::error_code ec;
        if (it->is_regular_file(ec)) add(it->path());
    }
    return total;
}

// What reading an archive may add to the address space: libotf2's buffers
// (chunks of at most 16 MiB) and libraries, and the events kept, each of
// which is several bytes on disk and 32 in memory, in a vector that may
// double.
std::uint64_t read_budget(std::uint64_t archive)
{
    constexpr std::uint64_t base       = std::uint64_t{1} << 30;
    constexpr std::uint64_t per_byte   = 16;
    constexpr std::uint64_t no_further = std::uint64_t{1} << 50;
    return archive > (no_further - base) / per_byte ? no_further : base + per_byte * archive;
}

struct ReaderCloser {
    void operator()(OTF2_Reader *reader) const { OTF2_Reader_Close(reader); }
};
using ReaderHandle = std::unique_ptr<OTF2_Reader, ReaderCloser>;

enum class RegionKind {
    other,          // not an event
    communication,  // point-to-point, collective, barrier: always an event
    wait,           // MPI_Wait*: always an event
    test,           // MPI_Test*: an event when it completed a request
};

struct RegionDef {
    OTF2_StringRef name = OTF2_UNDEFINED_STRING;
    RegionKind kind     = RegionKind::other;
};

struct LocationDef {
    OTF2_LocationRef id         = 0;
    OTF2_StringRef name         = OTF2_UNDEFINED_STRING;
    OTF2_LocationGroupRef group = OTF2_UNDEFINED_LOCATION_GROUP;
};

struct GlobalDefs {
    std::unordered_map<OTF2_StringRef, std::string> strings;
    std::unordered_map<OTF2_RegionRef, RegionDef> regions;
    std::unordered_map<OTF2_LocationGroupRef, OTF2_StringRef> groups;
    std::vector<LocationDef> locations;
    std::vector<std::uint64_t> mpi_locations;
    std::uint64_t timer_resolution = 0;  // ticks per second; 0: no ClockProperties
    std::uint64_t global_offset    = 0;

    std::string string(OTF2_StringRef ref) const
    {
        const auto it = strings.find(ref);
        return it != strings.end() ? it->second : std::string();
    }
};

RegionKind region_kind(OTF2_Paradigm paradigm, OTF2_RegionRole role, const std::string& name)
{
    if (paradigm != OTF2_PARADIGM_MPI) {
        return RegionKind::other;
    }
    switch (role) {
    case OTF2_REGION_ROLE_POINT2POINT:
    case OTF2_REGION_ROLE_COLL_ONE2ALL:
    case OTF2_REGION_ROLE_COLL_ALL2ONE:
    case OTF2_REGION_ROLE_COLL_ALL2ALL:
    case OTF2_REGION_ROLE_COLL_OTHER:
    case OTF2_REGION_ROLE_BARRIER:
    case OTF2_REGION_ROLE_IMPLICIT_BARRIER: return RegionKind::communication;
    default: break;
    }
    for (const char *wait : {"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome"}) {
        if (name == wait) {
            return RegionKind::wait;
        }
    }
    for (const char *test : {"MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"}) {
        if (name == test) {
            return RegionKind::test;
        }
    }
    return RegionKind::other;
}

// ------------------------------------------------------------ definitions

// The region callback needs the region's name to classify it, and OTF2 does
// not promise strings come first: regions are classified after the read.
struct RawRegion {
    OTF2_StringRef name;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
};

struct DefsReading {
    GlobalDefs defs;
    std::unordered_map<OTF2_RegionRef, RawRegion> raw_regions;
};

OTF2_CallbackCode on_clock(void *data, uint64_t resolution, uint64_t offset, uint64_t, uint64_t)
{
    auto& defs            = static_cast<DefsReading *>(data)->defs;
    defs.timer_resolution = resolution;
    defs.global_offset    = offset;
    return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_string(void *data, OTF2_StringRef self, const char *text)
{
    static_cast<DefsReading *>(data)->defs.strings[self] = text != nullptr ? text : "";
    return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_region(void *data, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef,
                            OTF2_StringRef, OTF2_RegionRole role, OTF2_Paradigm paradigm,
                            OTF2_RegionFlag, OTF2_StringRef, uint32_t, uint32_t)
{
    static_cast<DefsReading *>(data)->raw_regions[self] = {name, role, paradigm};
    return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_location_group(void *data, OTF2_LocationGroupRef self, OTF2_StringRef name,
                                    OTF2_LocationGroupType, OTF2_SystemTreeNodeRef,
                                    OTF2_LocationGroupRef)
{
    static_cast<DefsReading *>(data)->defs.groups[self] = name;
    return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_location(void *data, OTF2_LocationRef self, OTF2_StringRef name,
                              OTF2_LocationType, uint64_t, OTF2_LocationGroupRef group)
{
    static_cast<DefsReading *>(data)->defs.locations.push_back({self, name, group});
    return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode on_group(void *data, OTF2_GroupRef, OTF2_StringRef, OTF2_GroupType type,
                           OTF2_Paradigm paradigm, OTF2_GroupFlag, uint32_t members,
                           const uint64_t *member)
{
    auto& defs = static_cast<DefsReading *>(data)->defs;
    if (type == OTF2_GROUP_TYPE_COMM_LOCATIONS && paradigm == OTF2_PARADIGM_MPI &&
        defs.mpi_locations.empty()) {
        defs.mpi_locations.assign(member, member + members);
    }
    return OTF2_CALLBACK_SUCCESS;
}

GlobalDefs read_global_defs(OTF2_Reader *reader, const std::string& anchor,
                            const Otf2Messages& messages)
{
    DefsReading reading;
    OTF2_GlobalDefReader *const defs  = OTF2_Reader_GetGlobalDefReader(reader);
    OTF2_GlobalDefReaderCallbacks *cb = OTF2_GlobalDefReaderCallbacks_New();
    if (defs == nullptr || cb == nullptr) {
        OTF2_GlobalDefReaderCallbacks_Delete(cb);
        throw TraceError(anchor, 0, "cannot read the archive's definitions" + messages.detail());
    }
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, on_clock);
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, on_string);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, on_region);
    OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb, on_location_group);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, on_location);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, on_group);
    OTF2_Reader_RegisterGlobalDefCallbacks(reader, defs, cb, &reading);
    OTF2_GlobalDefReaderCallbacks_Delete(cb);
    uint64_t read               = 0;
    const OTF2_ErrorCode status = OTF2_Reader_ReadAllGlobalDefinitions(reader, defs, &read);
    OTF2_Reader_CloseGlobalDefReader(reader, defs);
    if (status != OTF2_SUCCESS) {
        throw TraceError(anchor, 0, "cannot read the archive's definitions" + messages.detail());
    }
    GlobalDefs& result = reading.defs;
    if (result.timer_resolution == 0) {
        throw TraceError(anchor, 0,
                         "the archive has no ClockProperties definition (timer resolution), "
                         "so its timestamps cannot be converted to nanoseconds");
    }
    for (const auto& [ref, raw] : reading.raw_regions) {
        result.regions[ref] = {raw.name,
                               region_kind(raw.paradigm, raw.role, result.string(raw.name))};
    }
    std::sort(result.locations.begin(), result.locations.end(),
              [](const LocationDef& a, const LocationDef& b) { return a.id < b.id; });
    return std::move(reading.defs);
}

// ------------------------------------------------------------ locations

std::vector<Otf2Location> describe_locations(const GlobalDefs& defs)
{
    std::vector<Otf2Location> out;
    for (const LocationDef& l : defs.locations) {
        const auto group = defs.groups.find(l.group);
        const bool mpi   = std::find(defs.mpi_locations.begin(), defs.mpi_locations.end(), l.id) !=
                         defs.mpi_locations.end();
        out.push_back({l.id, defs.string(l.name),
                       group != defs.groups.end() ? defs.string(group->second) : std::string(),
                       mpi});
    }
    return out;
}

// "0 "Master thread" in "MPI Rank 0" (MPI), 1 ...", at most 16 of them.
std::string location_list(const std::vector<Otf2Location>& locations)
{
    constexpr std::size_t max_listed = 16;
    std::string out;
    for (std::size_t i = 0; i < locations.size() && i < max_listed; ++i) {
        const Otf2Location& l = locations[i];
        out.append(i == 0 ? "" : ", ").append(std::to_string(l.id));
        if (!l.name.empty()) {
            out.append(" \"").append(shown(l.name)).append("\"");
        }
        if (!l.group.empty()) {
            out.append(" in \"").append(shown(l.group)).append("\"");
        }
        if (l.mpi) {
            out.append(" (MPI)");
        }
    }
    if (locations.size() > max_listed) {
        out.append(", and " + std::to_string(locations.size() - max_listed) + " more");
    }
    return out;
}

const Otf2Location& choose_location(const std::vector<Otf2Location>& locations,
                                    const std::vector<std::uint64_t>& mpi_locations,
                                    const std::string& wanted, const std::string& anchor)
{
    if (locations.empty()) {
        throw TraceError(anchor, 0, "the archive defines no locations");
    }
    auto find = [&](std::uint64_t id) {
        return std::find_if(locations.begin(), locations.end(),
                            [id](const Otf2Location& l) { return l.id == id; });
    };
    if (wanted.empty()) {
        for (const std::uint64_t id : mpi_locations) {
            if (const auto it = find(id); it != locations.end()) {
                return *it;
            }
        }
        return locations.front();
    }
    const bool digits =
            !wanted.empty() && wanted.size() <= 20 &&
            std::all_of(wanted.begin(), wanted.end(), [](char c) { return c >= '0' && c <= '9'; });
    errno                       = 0;
    const unsigned long long id = digits ? std::strtoull(wanted.c_str(), nullptr, 10) : 0;
    const auto it               = digits && errno == 0 ? find(id) : locations.end();
    if (it == locations.end()) {
        throw TraceError(anchor, 0,
                         "--location '" + shown(wanted) +
                                 "' is not a location of this archive; "
                                 "its locations (OTF2 location ids): " +
                                 location_list(locations));
    }
    return *it;
}

// ------------------------------------------------------------ events

// (communicator, peer or root): who the records of a region talk to.
using Partner = std::pair<std::uint32_t, std::uint32_t>;

// Turns one location's records into events (the mapping in otf2_trace.h).
class EventBuilder {
public:
    EventBuilder(const GlobalDefs& defs, OTF2_LocationRef location)
        : defs_(defs), location_(location)
    {}

    void enter(OTF2_TimeStamp time, OTF2_RegionRef region)
    {
        stack_.push_back(region);
        if (open_) {
            return;
        }
        const auto it = defs_.regions.find(region);
        if (it == defs_.regions.end() || it->second.kind == RegionKind::other) {
            return;
        }
        open_ = Open{stack_.size() - 1, it->second.kind, region, ns(time), 0, {}, false};
    }

    void leave(OTF2_TimeStamp time, OTF2_RegionRef region)
    {
        if (stack_.empty() || stack_.back() != region) {
            throw Interrupt("location " + std::to_string(location_) + ": Leave of region '" +
                            shown(region_name(region)) + "' at tick " + std::to_string(time) +
                            (stack_.empty()
                                     ? " without an Enter"
                                     : " while region '" + shown(region_name(stack_.back())) +
                                               "' is open"));
        }
        stack_.pop_back();
        if (!open_ || stack_.size() != open_->depth) {
            return;
        }
        if (open_->kind != RegionKind::test || open_->completed) {
            Event e;
            e.start_ns = open_->start_ns;
            e.end_ns   = ns(time);
            e.id       = id_of(*open_);
            e.bytes    = open_->bytes;
            events_.push_back(e);
        }
        open_.reset();
    }

    // A record inside the open region (if any): its bytes and partner.
    void message(std::uint32_t communicator, std::uint32_t peer, std::uint64_t bytes)
    {
        if (open_) {
            open_->bytes += bytes;
            open_->partners.emplace_back(communicator, peer);
        }
    }

    void isend(std::uint32_t communicator, std::uint32_t receiver, std::uint64_t bytes,
               std::uint64_t request)
    {
        requests_[request] = {communicator, receiver};
        message(communicator, receiver, bytes);
    }

    void isend_complete(std::uint64_t request)
    {
        const auto it = requests_.find(request);
        if (open_) {
            open_->completed = true;
            if (it != requests_.end()) {
                open_->partners.push_back(it->second);
            }
        }
        if (it != requests_.end()) {
            requests_.erase(it);
        }
    }

    void irecv_complete(std::uint32_t communicator, std::uint32_t sender, std::uint64_t bytes)
    {
        if (open_) {
            open_->completed = true;
        }
        message(communicator, sender, bytes);
    }

    std::vector<Event> take_events() { return std::move(events_); }

private:
    struct Open {
        std::size_t depth;  // its index in stack_
        RegionKind kind;
        OTF2_RegionRef region;
        TimeNs start_ns;
        std::uint64_t bytes;
        std::vector<Partner> partners;
        bool completed;  // a request completed in it
    };

    std::string region_name(OTF2_RegionRef region) const
    {
        const auto it = defs_.regions.find(region);
        return it != defs_.regions.end() ? defs_.string(it->second.name)
                                         : "#" + std::to_string(region);
    }

    TimeNs ns(OTF2_TimeStamp ticks) const
    {
        if (ticks < defs_.global_offset) {
            throw Interrupt("location " + std::to_string(location_) + ": timestamp " +
                            std::to_string(ticks) + " is before the clock's global offset " +
                            std::to_string(defs_.global_offset));
        }
        // 128 bits: ticks * 10^9 overflows 64 bits after 18 s at 1 GHz.
        const unsigned __int128 scaled =
                static_cast<unsigned __int128>(ticks - defs_.global_offset) * 1'000'000'000u /
                defs_.timer_resolution;
        // Past the trace format's bound (2^62 ns); TraceReader names it.
        constexpr auto limit = static_cast<unsigned __int128>(std::numeric_limits<TimeNs>::max());
        return static_cast<TimeNs>(std::min(scaled, limit));
    }

    EventId id_of(Open& open)
    {
        std::sort(open.partners.begin(), open.partners.end());
        open.partners.erase(std::unique(open.partners.begin(), open.partners.end()),
                            open.partners.end());
        std::string key = region_name(open.region);
        for (const auto& [communicator, peer] : open.partners) {
            key.append(1, '\0').append(std::to_string(communicator)).append(1, ':');
            key.append(std::to_string(peer));
        }
        const auto [it, added] = ids_.try_emplace(std::move(key), next_id_);
        if (added) {
            if (next_id_ == std::numeric_limits<EventId>::max()) {
                throw Interrupt("more than 2^32-1 distinct (MPI function, partners) pairs");
            }
            ++next_id_;
        }
        return it->second;
    }

    const GlobalDefs& defs_;
    OTF2_LocationRef location_;
    std::vector<OTF2_RegionRef> stack_;
    std::optional<Open> open_;
    std::unordered_map<std::uint64_t, Partner> requests_;  // MpiIsend request -> partner
    std::unordered_map<std::string, EventId> ids_;
    EventId next_id_ = 1;
    std::vector<Event> events_;
};

struct EventsReading {
    EventBuilder builder;
    std::exception_ptr error;
};

// Calls `f` on the builder; an exception becomes OTF2_CALLBACK_INTERRUPT.
template <typename F>
OTF2_CallbackCode guarded(void *data, F&& f)
{
    auto& reading = *static_cast<EventsReading *>(data);
    try {
        f(reading.builder);
        return OTF2_CALLBACK_SUCCESS;
    } catch (...) {
        reading.error = std::current_exception();
        return OTF2_CALLBACK_INTERRUPT;
    }
}

OTF2_CallbackCode on_enter(OTF2_LocationRef, OTF2_TimeStamp time, uint64_t, void *data,
                           OTF2_AttributeList *, OTF2_RegionRef region)
{
    return guarded(data, [&](EventBuilder& b) { b.enter(time, region); });
}

OTF2_CallbackCode on_leave(OTF2_LocationRef, OTF2_TimeStamp time, uint64_t, void *data,
                           OTF2_AttributeList *, OTF2_RegionRef region)
{
    return guarded(data, [&](EventBuilder& b) { b.leave(time, region); });
}

OTF2_CallbackCode on_send(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void *data,
                          OTF2_AttributeList *, uint32_t receiver, OTF2_CommRef communicator,
                          uint32_t, uint64_t length)
{
    return guarded(data, [&](EventBuilder& b) { b.message(communicator, receiver, length); });
}

OTF2_CallbackCode on_isend(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void *data,
                           OTF2_AttributeList *, uint32_t receiver, OTF2_CommRef communicator,
                           uint32_t, uint64_t length, uint64_t request)
{
    return guarded(data,
                   [&](EventBuilder& b) { b.isend(communicator, receiver, length, request); });
}

OTF2_CallbackCode on_isend_complete(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void *data,
                                    OTF2_AttributeList *, uint64_t request)
{
    return guarded(data, [&](EventBuilder& b) { b.isend_complete(request); });
}

OTF2_CallbackCode on_recv(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void *data,
                          OTF2_AttributeList *, uint32_t sender, OTF2_CommRef communicator,
                          uint32_t, uint64_t length)
{
    return guarded(data, [&](EventBuilder& b) { b.message(communicator, sender, length); });
}

OTF2_CallbackCode on_irecv(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void *data,
                           OTF2_AttributeList *, uint32_t sender, OTF2_CommRef communicator,
                           uint32_t, uint64_t length, uint64_t)
{
    return guarded(data, [&](EventBuilder& b) { b.irecv_complete(communicator, sender, length); });
}

OTF2_CallbackCode on_collective_end(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void *data,
                                    OTF2_AttributeList *, OTF2_CollectiveOp,
                                    OTF2_CommRef communicator, uint32_t root, uint64_t sent,
                                    uint64_t received)
{
    return guarded(data, [&](EventBuilder& b) { b.message(communicator, root, sent + received); });
}

std::vector<Event> read_location_events(OTF2_Reader *reader, const GlobalDefs& defs,
                                        OTF2_LocationRef location, const std::string& anchor,
                                        Otf2Messages& messages)
{
    const std::string where = "location " + std::to_string(location);
    auto fail               = [&](const std::string              &what) {
        throw TraceError(anchor, 0,
                                       "cannot read the events of " + where + ": " + what + messages.detail());
    };
    if (OTF2_Reader_SelectLocation(reader, location) != OTF2_SUCCESS ||
        OTF2_Reader_OpenEvtFiles(reader) != OTF2_SUCCESS) {
        fail("opening its event files failed");
    }
    // The local definitions map the location's own ids to the global ones
    // (Score-P writes events with local ids); an archive may have none.
    if (OTF2_Reader_OpenDefFiles(reader) == OTF2_SUCCESS) {
        if (OTF2_DefReader *local = OTF2_Reader_GetDefReader(reader, location)) {
            uint64_t read = 0;
            OTF2_Reader_ReadAllLocalDefinitions(reader, local, &read);
            OTF2_Reader_CloseDefReader(reader, local);
        }
        OTF2_Reader_CloseDefFiles(reader);
    }
    messages.clear();
    OTF2_EvtReader *const events = OTF2_Reader_GetEvtReader(reader, location);
    if (events == nullptr) {
        fail("it has no event reader");
    }
    OTF2_EvtReaderCallbacks *const cb = OTF2_EvtReaderCallbacks_New();
    if (cb == nullptr) {
        fail("out of memory");
    }
    OTF2_EvtReaderCallbacks_SetEnterCallback(cb, on_enter);
    OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, on_leave);
    OTF2_EvtReaderCallbacks_SetMpiSendCallback(cb, on_send);
    OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, on_isend);
    OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cb, on_isend_complete);
    OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cb, on_recv);
    OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, on_irecv);
    OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, on_collective_end);
    EventsReading reading{EventBuilder(defs, location), nullptr};
    OTF2_Reader_RegisterEvtCallbacks(reader, events, cb, &reading);
    OTF2_EvtReaderCallbacks_Delete(cb);
    uint64_t read               = 0;
    const OTF2_ErrorCode status = OTF2_Reader_ReadAllLocalEvents(reader, events, &read);
    OTF2_Reader_CloseEvtReader(reader, events);
    OTF2_Reader_CloseEvtFiles(reader);
    if (reading.error) {
        try {
            std::rethrow_exception(reading.error);
        } catch (const Interrupt& e) {
            throw TraceError(anchor, 0, e.what());
        }
    }
    if (status != OTF2_SUCCESS) {
        fail("reading failed after " + std::to_string(read) + " records");
    }
    return reading.builder.take_events();
}

// The child's answer to read_otf2 (isolated_call.h): the length of a CBOR
// header (8 bytes, host order: both ends are the same program), the header,
// then the events as they are in memory. Names and messages travel as byte
// strings, as the archive has them (they need not be UTF-8).
using nlohmann::json;

json::binary_t as_bytes(const std::string& text)
{
    return json::binary_t({text.begin(), text.end()});
}

std::string as_text(const json& bytes)
{
    const auto& b = bytes.get_binary();
    return std::string(b.begin(), b.end());
}

std::string frame(const json& header, const std::vector<Event>& events = {})
{
    const std::vector<std::uint8_t> cbor = json::to_cbor(header);
    const std::uint64_t length           = cbor.size();
    std::string bytes;
    bytes.reserve(sizeof length + cbor.size() + events.size() * sizeof(Event));
    bytes.append(reinterpret_cast<const char *>(&length), sizeof length);
    bytes.append(cbor.begin(), cbor.end());
    bytes.append(reinterpret_cast<const char *>(events.data()), events.size() * sizeof(Event));
    return bytes;
}

json location_header(const Otf2Location& l)
{
    return {{"id", l.id}, {"name", as_bytes(l.name)}, {"group", as_bytes(l.group)}, {"mpi", l.mpi}};
}

Otf2Location location_from(const json& j)
{
    return {j.at("id").get<std::uint64_t>(), as_text(j.at("name")), as_text(j.at("group")),
            j.at("mpi").get<bool>()};
}

std::string encode_answer(const Otf2Stream& stream)
{
    json locations = json::array();
    for (const auto& l : stream.locations)
        locations.push_back(location_header(l));
    const json header = {{"location", location_header(stream.location)},
                         {"locations", std::move(locations)},
                         {"events", stream.events.size()}};
    return frame(header, stream.events);
}

std::string encode_failure(const TraceError& e)
{
    return frame({{"error", {{"line", e.line()}, {"message", as_bytes(e.message())}}}});
}

// The parent's side. The child is our own code, but the heap it ran on may
// have been damaged by libotf2 before it answered: every length is checked.
Otf2Stream decode_answer(const std::string& answer, const std::string& anchor)
{
    const auto garbled = [&anchor](const std::string& why) {
        return TraceError(anchor, 0,
                          "the OTF2 reader's answer is garbled (" + why +
                                  "): the archive is probably damaged");
    };
    std::uint64_t length = 0;
    if (answer.size() < sizeof length) throw garbled("no header");
    std::memcpy(&length, answer.data(), sizeof length);
    if (length > answer.size() - sizeof length) throw garbled("header past the end");
    json header;
    try {
        header = json::from_cbor(answer.begin() + sizeof length,
                                 answer.begin() +
                                         static_cast<std::ptrdiff_t>(sizeof length + length));
        if (header.contains("error")) {
            const json& error = header.at("error");
            throw TraceError(anchor, error.at("line").get<std::size_t>(),
                             as_text(error.at("message")));
        }
        Otf2Stream stream;
        stream.location = location_from(header.at("location"));
        for (const auto& l : header.at("locations"))
            stream.locations.push_back(location_from(l));
        const std::uint64_t count = header.at("events").get<std::uint64_t>();
        const std::size_t rest    = answer.size() - sizeof length - length;
        if (rest % sizeof(Event) != 0 || rest / sizeof(Event) != count) {
            throw garbled(std::to_string(count) + " events announced, " + std::to_string(rest) +
                          " bytes sent");
        }
        stream.events.resize(count);
        std::memcpy(stream.events.data(), answer.data() + sizeof length + length, rest);
        return stream;
    } catch (const json::exception& e) {
        throw garbled(e.what());
    }
}

// run_isolated(), with a crash of the reader said as what it means here.
std::string run_isolated_or_explain(const std::string& anchor,
                                    const std::function<std::string()>& work)
{
    try {
        return run_isolated(work);
    } catch (const IsolatedCallFailed& e) {
        throw TraceError(anchor, 0,
                         std::string("the OTF2 reader failed on this archive (") + e.what() +
                                 "): it is damaged, or libotf2 cannot read it");
    }
}

}  // namespace

bool is_otf2_anchor(std::string_view path)
{
    constexpr std::string_view suffix = ".otf2";
    return path.size() > suffix.size() && path.substr(path.size() - suffix.size()) == suffix;
}

Otf2Stream read_otf2_here(const std::string& anchor, const std::string& location,
                          std::uint64_t memory_budget)
{
    // OTF2's own message for a missing anchor file is about its internals.
    struct stat st {};
    if (::stat(anchor.c_str(), &st) != 0) {
        throw TraceError(anchor, 0, std::string("cannot open: ") + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        throw TraceError(anchor, 0,
                         "is a directory; give the archive's anchor file "
                         "(DIR/traces.otf2 for a Score-P run)");
    }
    Otf2Messages messages;
    messages.set_memory_budget(memory_budget);
    ReaderHandle reader(OTF2_Reader_Open(anchor.c_str()));
    if (!reader) {
        throw TraceError(anchor, 0, "not a readable OTF2 archive anchor file" + messages.detail());
    }
    if (OTF2_Reader_SetSerialCollectiveCallbacks(reader.get()) != OTF2_SUCCESS) {
        throw TraceError(anchor, 0, "cannot set up the OTF2 reader" + messages.detail());
    }
    const GlobalDefs defs = read_global_defs(reader.get(), anchor, messages);
    Otf2Stream stream;
    stream.locations = describe_locations(defs);
    stream.location  = choose_location(stream.locations, defs.mpi_locations, location, anchor);
    stream.events = read_location_events(reader.get(), defs, stream.location.id, anchor, messages);
    return stream;
}

Otf2Stream read_otf2(const std::string& anchor, const std::string& location)
{
    const std::string answer = run_isolated_or_explain(anchor, [&] {
        // The cap stays in the child, where it cannot starve anything else.
        const AddressSpaceCap cap(read_budget(archive_bytes(anchor)));
        try {
            return encode_answer(read_otf2_here(anchor, location, cap.active() ? cap.budget() : 0));
        } catch (const TraceError& e) {
            return encode_failure(e);
        }
    });
    return decode_answer(answer, anchor);
}

std::unique_ptr<predict::TraceReader> open_trace(const std::string& path,
                                                 const std::string& location)
{
    if (is_otf2_anchor(path)) {
        return std::make_unique<predict::TraceReader>(read_otf2(path, location).events, path);
    }
    if (!location.empty()) {
        throw TraceError(path, 0,
                         "--location chooses a location of an OTF2 archive, and this "
                         "is a text trace (an OTF2 anchor file's name ends in .otf2)");
    }
    return std::make_unique<predict::TraceReader>(path);
}

}  // namespace slim::tools
