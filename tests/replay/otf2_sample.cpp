// SPDX-License-Identifier: BSD-3-Clause
#include "otf2_sample.h"

#include <otf2/otf2.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace slim::test {

namespace {

void check(OTF2_ErrorCode status, const char *what)
{
    if (status != OTF2_SUCCESS) {
        throw std::runtime_error(std::string(what) + ": " + OTF2_Error_GetName(status) + " (" +
                                 OTF2_Error_GetDescription(status) + ")");
    }
}

OTF2_FlushType pre_flush(void *, OTF2_FileType, OTF2_LocationRef, void *, bool)
{
    return OTF2_FLUSH;
}

OTF2_TimeStamp post_flush(void *, OTF2_FileType, OTF2_LocationRef) { return 0; }

struct ArchiveCloser {
    void operator()(OTF2_Archive *archive) const { OTF2_Archive_Close(archive); }
};

// Strings, regions, communicators of the sample (their OTF2 refs).
enum String : OTF2_StringRef {
    s_empty,
    s_main,
    s_send,
    s_recv,
    s_allreduce,
    s_bcast,
    s_irecv,
    s_isend,
    s_wait,
    s_test,
    s_comm_rank,
    s_compute,
    s_world,
    s_sub,
    s_thread,
    s_rank0,
    s_rank1,
    s_node,
    s_count
};
const char *const strings[s_count] = {"",
                                      "main",
                                      "MPI_Send",
                                      "MPI_Recv",
                                      "MPI_Allreduce",
                                      "MPI_Bcast",
                                      "MPI_Irecv",
                                      "MPI_Isend",
                                      "MPI_Wait",
                                      "MPI_Test",
                                      "MPI_Comm_rank",
                                      "compute",
                                      "MPI_COMM_WORLD",
                                      "MPI_COMM_SUB",
                                      "Master thread",
                                      "MPI Rank 0",
                                      "MPI Rank 1",
                                      "node0"};

// The hostile variant's names: what an archive from elsewhere may carry,
// terminal escape sequences that retitle, clear, blink and colour.
const char *hostile_string(OTF2_StringRef s)
{
    switch (s) {
    case s_send: return "MPI_Send\x1b]0;PWNED-TITLE\x07\x1b[31m";
    case s_recv: return "MPI_Recv\x1b[2J\x1b[H";
    case s_thread: return "Master\x1b[5m thread\x1b]0;TITLE\x07";
    case s_rank0: return "MPI Rank 0\x1b[41m";
    default: return strings[s];
    }
}

enum Region : OTF2_RegionRef {
    r_main,
    r_send,
    r_recv,
    r_allreduce,
    r_bcast,
    r_irecv,
    r_isend,
    r_wait,
    r_test,
    r_comm_rank,
    r_compute
};
constexpr OTF2_CommRef world = 0, sub = 1;

class Writer {
public:
    Writer(OTF2_EvtWriter *w) : w_(w) {}

    // Times in ticks after the clock's global offset.
    void enter(std::uint64_t t, Region r)
    {
        check(OTF2_EvtWriter_Enter(w_, nullptr, at(t), r), "Enter");
    }
    void leave(std::uint64_t t, Region r)
    {
        check(OTF2_EvtWriter_Leave(w_, nullptr, at(t), r), "Leave");
    }
    void send(std::uint64_t t, std::uint32_t to, OTF2_CommRef c, std::uint64_t bytes)
    {
        check(OTF2_EvtWriter_MpiSend(w_, nullptr, at(t), to, c, 7, bytes), "MpiSend");
    }
    void recv(std::uint64_t t, std::uint32_t from, OTF2_CommRef c, std::uint64_t bytes)
    {
        check(OTF2_EvtWriter_MpiRecv(w_, nullptr, at(t), from, c, 7, bytes), "MpiRecv");
    }
    void collective_begin(std::uint64_t t)
    {
        check(OTF2_EvtWriter_MpiCollectiveBegin(w_, nullptr, at(t)), "MpiCollectiveBegin");
    }
    void collective_end(std::uint64_t t, OTF2_CollectiveOp op, std::uint32_t root,
                        std::uint64_t sent, std::uint64_t received)
    {
        check(OTF2_EvtWriter_MpiCollectiveEnd(w_, nullptr, at(t), op, world, root, sent, received),
              "MpiCollectiveEnd");
    }
    void collective(std::uint64_t begin, std::uint64_t end, OTF2_CollectiveOp op,
                    std::uint32_t root, std::uint64_t sent, std::uint64_t received)
    {
        collective_begin(begin);
        collective_end(end, op, root, sent, received);
    }
    OTF2_EvtWriter *get() const { return w_; }
    static OTF2_TimeStamp at(std::uint64_t t) { return otf2_sample_offset + t; }

private:
    OTF2_EvtWriter *w_;
};

// Rank 0 (location 0): the events test_otf2_trace.cpp expects, in ticks.
void write_rank0(Writer w)
{
    w.enter(0, r_main);
    w.enter(100, r_comm_rank);  // MPI, not communication
    w.leave(200, r_comm_rank);
    w.enter(1003, r_send);  // 401.2 ns: rounded down
    w.send(1010, 1, world, 4096);
    w.leave(2000, r_send);
    w.enter(2500, r_compute);  // not MPI
    w.leave(5000, r_compute);
    w.enter(5000, r_send);  // same call, same peer
    w.send(5005, 1, world, 4096);
    w.leave(6000, r_send);
    w.enter(7000, r_send);  // another peer (itself)
    w.send(7005, 0, world, 64);
    w.leave(7500, r_send);
    w.enter(8000, r_send);  // the first peer on another communicator
    w.send(8005, 1, sub, 4096);
    w.leave(8500, r_send);
    w.enter(10000, r_allreduce);
    w.collective_begin(10001);
    w.enter(10100, r_wait);  // nested: counts for the allreduce
    w.leave(10200, r_wait);
    w.collective_end(10900, OTF2_COLLECTIVE_OP_ALLREDUCE, OTF2_UNDEFINED_UINT32, 8, 8);
    w.leave(11000, r_allreduce);
    w.enter(12000, r_irecv);
    check(OTF2_EvtWriter_MpiIrecvRequest(w.get(), nullptr, w.at(12001), 42), "MpiIrecvRequest");
    w.leave(12050, r_irecv);
    w.enter(12500, r_test);  // completes nothing: no event
    check(OTF2_EvtWriter_MpiRequestTest(w.get(), nullptr, w.at(12510), 42), "MpiRequestTest");
    w.leave(12520, r_test);
    w.enter(13000, r_wait);
    check(OTF2_EvtWriter_MpiIrecv(w.get(), nullptr, w.at(13400), 1, world, 7, 1024, 42),
          "MpiIrecv");
    w.leave(13500, r_wait);
    w.enter(14000, r_isend);
    check(OTF2_EvtWriter_MpiIsend(w.get(), nullptr, w.at(14010), 1, world, 7, 2048, 43),
          "MpiIsend");
    w.leave(14100, r_isend);
    w.enter(15000, r_test);  // completes the isend: an event
    check(OTF2_EvtWriter_MpiIsendComplete(w.get(), nullptr, w.at(15010), 43), "MpiIsendComplete");
    w.leave(15020, r_test);
    w.enter(20000, r_send);
    w.send(20010, 1, world, 4096);
    w.leave(21000, r_send);
    w.leave(30000, r_main);
}

// Rank 1 (location 1).
void write_rank1(Writer w, bool hostile)
{
    w.enter(0, r_main);
    w.enter(1500, r_recv);
    w.recv(1900, 0, world, 4096);
    w.leave(2000, r_recv);
    w.enter(3000, r_bcast);  // root 0
    w.collective(3001, 3400, OTF2_COLLECTIVE_OP_BCAST, 0, 0, 256);
    w.leave(3500, r_bcast);
    w.enter(4000, r_bcast);  // root 1: another id
    w.collective(4001, 4400, OTF2_COLLECTIVE_OP_BCAST, 1, 256, 0);
    w.leave(4500, r_bcast);
    w.enter(5000, r_bcast);  // root 0 again
    w.collective(5001, 5400, OTF2_COLLECTIVE_OP_BCAST, 0, 0, 256);
    w.leave(5500, r_bcast);
    w.enter(10000, r_allreduce);
    w.collective(10001, 10900, OTF2_COLLECTIVE_OP_ALLREDUCE, OTF2_UNDEFINED_UINT32, 8, 8);
    w.leave(11000, r_allreduce);
    w.leave(30000, r_main);
    w.enter(40000, r_recv);  // never left: the trace ends here
    if (hostile) {
        w.leave(40100, r_send);  // not the open region: the reader names both
    }
}

void write_definitions(OTF2_GlobalDefWriter *d, bool hostile)
{
    check(OTF2_GlobalDefWriter_WriteClockProperties(d, otf2_sample_resolution, otf2_sample_offset,
                                                    50000, 0),
          "ClockProperties");
    for (OTF2_StringRef s = 0; s < s_count; ++s) {
        check(OTF2_GlobalDefWriter_WriteString(d, s, hostile ? hostile_string(s) : strings[s]),
              "String");
    }
    struct {
        Region ref;
        String name;
        OTF2_RegionRole role;
        OTF2_Paradigm paradigm;
    } const regions[] = {
            {r_main, s_main, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER},
            {r_send, s_send, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
            {r_recv, s_recv, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
            {r_allreduce, s_allreduce, OTF2_REGION_ROLE_COLL_ALL2ALL, OTF2_PARADIGM_MPI},
            {r_bcast, s_bcast, OTF2_REGION_ROLE_COLL_ONE2ALL, OTF2_PARADIGM_MPI},
            {r_irecv, s_irecv, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
            {r_isend, s_isend, OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
            // Score-P's roles for these: "function".
            {r_wait, s_wait, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
            {r_test, s_test, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
            {r_comm_rank, s_comm_rank, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
            {r_compute, s_compute, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER},
    };
    for (const auto& r : regions) {
        check(OTF2_GlobalDefWriter_WriteRegion(d, r.ref, r.name, r.name, s_empty, r.role,
                                               r.paradigm, OTF2_REGION_FLAG_NONE, s_empty, 0, 0),
              "Region");
    }
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(d, 0, s_node, s_node,
                                                   OTF2_UNDEFINED_SYSTEM_TREE_NODE),
          "SystemTreeNode");
    for (OTF2_LocationGroupRef rank = 0; rank < 2; ++rank) {
        check(OTF2_GlobalDefWriter_WriteLocationGroup(d, rank, rank == 0 ? s_rank0 : s_rank1,
                                                      OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                      OTF2_UNDEFINED_LOCATION_GROUP),
              "LocationGroup");
    }
    // Rank 1's location first: the reader orders locations by id.
    for (const OTF2_LocationRef location : {OTF2_LocationRef{1}, OTF2_LocationRef{0}}) {
        check(OTF2_GlobalDefWriter_WriteLocation(d, location, s_thread,
                                                 OTF2_LOCATION_TYPE_CPU_THREAD, 40,
                                                 static_cast<OTF2_LocationGroupRef>(location)),
              "Location");
    }
    const std::uint64_t ranks[] = {0, 1};
    check(OTF2_GlobalDefWriter_WriteGroup(d, 0, s_empty, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, 2, ranks),
          "Group");
    check(OTF2_GlobalDefWriter_WriteGroup(d, 1, s_empty, OTF2_GROUP_TYPE_COMM_GROUP,
                                          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, 2, ranks),
          "Group");
    check(OTF2_GlobalDefWriter_WriteComm(d, world, s_world, 1, OTF2_UNDEFINED_COMM,
                                         OTF2_COMM_FLAG_NONE),
          "Comm");
    check(OTF2_GlobalDefWriter_WriteComm(d, sub, s_sub, 1, world, OTF2_COMM_FLAG_NONE), "Comm");
}

}  // namespace

void write_otf2_sample(const std::string& dir, bool hostile_names)
{
    std::filesystem::create_directories(dir);
    static const OTF2_FlushCallbacks flush{pre_flush, post_flush};
    std::unique_ptr<OTF2_Archive, ArchiveCloser> archive(
            OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024,
                              4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE));
    if (!archive) {
        throw std::runtime_error("cannot create an OTF2 archive in " + dir);
    }
    OTF2_Archive *const a = archive.get();
    check(OTF2_Archive_SetFlushCallbacks(a, &flush, nullptr), "SetFlushCallbacks");
    check(OTF2_Archive_SetSerialCollectiveCallbacks(a), "SetSerialCollectiveCallbacks");
    check(OTF2_Archive_OpenEvtFiles(a), "OpenEvtFiles");
    for (const OTF2_LocationRef location : {OTF2_LocationRef{0}, OTF2_LocationRef{1}}) {
        OTF2_EvtWriter *const w = OTF2_Archive_GetEvtWriter(a, location);
        if (w == nullptr) {
            throw std::runtime_error("no event writer for location " + std::to_string(location));
        }
        location == 0 ? write_rank0(Writer(w)) : write_rank1(Writer(w), hostile_names);
        check(OTF2_Archive_CloseEvtWriter(a, w), "CloseEvtWriter");
    }
    check(OTF2_Archive_CloseEvtFiles(a), "CloseEvtFiles");
    // Empty local definitions, as the OTF2 examples write them.
    check(OTF2_Archive_OpenDefFiles(a), "OpenDefFiles");
    for (const OTF2_LocationRef location : {OTF2_LocationRef{0}, OTF2_LocationRef{1}}) {
        OTF2_DefWriter *const w = OTF2_Archive_GetDefWriter(a, location);
        check(OTF2_Archive_CloseDefWriter(a, w), "CloseDefWriter");
    }
    check(OTF2_Archive_CloseDefFiles(a), "CloseDefFiles");
    OTF2_GlobalDefWriter *const d = OTF2_Archive_GetGlobalDefWriter(a);
    if (d == nullptr) {
        throw std::runtime_error("no global definitions writer");
    }
    write_definitions(d, hostile_names);
    check(OTF2_Archive_Close(archive.release()), "Close");
}

}  // namespace slim::test
