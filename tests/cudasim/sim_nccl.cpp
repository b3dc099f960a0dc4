/* The NCCL shim: communicators over simulated GPUs of this process (ncclCommInitAll), grouped
 * all-reduce and broadcast. Arguments are checked as NCCL checks them (communicator alive, type
 * and op in range, buffers inside one allocation of the communicator's GPU, the stream that
 * GPU's); a collective of a several-rank communicator called outside a group by the one thread
 * that drives every rank, or a group where some rank of a communicator has no matching call, would
 * hang NCCL: here it is ncclInvalidUsage, said on stderr. At ncclGroupEnd the streams involved run
 * what they hold (the work before the collective), then each collective is computed in rank order
 * (sums in the element type, Avg = the sum times 1/nranks) and the results written; later work
 * on those streams comes after it, as on a GPU. */
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <vector>
#include "sim_internal.h"
#include "nccl.h"

using namespace cusim;

struct ncclComm {
    int clique, rank, nranks, device;
};

namespace {
struct call {
    bool bcast;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;
    ncclComm *comm;
    cudaStream_t stream;
};
std::set<ncclComm *> comms;
std::map<int, std::vector<ncclComm *>> cliques;
int next_clique;
thread_local int depth;
thread_local std::vector<call> queued;

bool type_ok(ncclDataType_t t) { return t == ncclFloat32 || t == ncclFloat64 || t == ncclFloat16 || t == ncclBfloat16; }
elem elem_of(ncclDataType_t t) {
    return t == ncclFloat64 ? elem::f64 : t == ncclFloat16 ? elem::f16 : t == ncclBfloat16 ? elem::bf16 : elem::f32;
}
/* bytes per element of every NCCL type (broadcast copies any type; reductions are simulated for
 * floating types only) */
size_t size_of(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclInt32: case ncclUint32: return 4;
    case ncclInt64: case ncclUint64: return 8;
    default: return elem_size(elem_of(t));
    }
}

ncclResult_t bad(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ncclResult_t bad(ncclResult_t r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("cudasim: nccl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return r;
}

ncclResult_t check(const call &c, const char *what) {
    if (!c.comm || !comms.count(c.comm)) return bad(ncclInvalidArgument, "%s: invalid or destroyed communicator", what);
    if (c.type < 0 || c.type >= ncclNumTypes) return bad(ncclInvalidArgument, "%s: invalid datatype %d", what, (int)c.type);
    if (!c.bcast && !type_ok(c.type)) return bad(ncclInvalidArgument, "%s: datatype %d not simulated (floating types only)", what, (int)c.type);
    if (!c.bcast && (c.op < 0 || c.op >= ncclNumOps)) return bad(ncclInvalidArgument, "%s: invalid reduction op %d", what, (int)c.op);
    if (c.bcast && (c.root < 0 || c.root >= c.comm->nranks)) return bad(ncclInvalidArgument, "%s: root %d out of range", what, c.root);
    CUstream_st *st = stream_of(c.stream);
    if (!st || !c.stream) return bad(ncclInvalidArgument, "%s: invalid stream (a stream of the communicator's GPU is needed)", what);
    if (st->device != c.comm->device)
        return bad(ncclInvalidArgument, "%s: stream of GPU %d for the communicator of GPU %d", what, st->device, c.comm->device);
    if (st->capturing) return bad(ncclInvalidUsage, "%s: the simulator does not capture NCCL calls in CUDA graphs", what);
    size_t bytes = c.count * size_of(c.type);
    bool send_needed = !c.bcast || c.comm->rank == c.root;
    if (c.count > 0) {
        if (send_needed && (!in_device_memory(c.send, bytes) || device_of(c.send) != c.comm->device))
            return bad(ncclInvalidArgument, "%s: sendbuff is not %zu bytes of device memory on GPU %d", what, bytes, c.comm->device);
        if (!in_device_memory(c.recv, bytes) || device_of(c.recv) != c.comm->device)
            return bad(ncclInvalidArgument, "%s: recvbuff is not %zu bytes of device memory on GPU %d", what, bytes, c.comm->device);
    }
    return ncclSuccess;
}

/* One collective over the calls of every rank (index = rank), run now. */
void run(const std::vector<const call *> &ranks) {
    const call &c0 = *ranks[0];
    elem t = elem_of(c0.type);
    size_t n = c0.count;
    device_window w;
    if (c0.bcast) {
        const call &root = *ranks[c0.root];
        std::vector<char> data((const char *)root.send, (const char *)root.send + n * size_of(c0.type));
        for (const call *c : ranks) memcpy(c->recv, data.data(), data.size());
        return;
    }
    std::vector<double> acc(n);
    for (size_t i = 0; i < n; i++) {
        float f = 0; double d = 0;
        for (size_t r = 0; r < ranks.size(); r++) {
            double v = load(ranks[r]->send, t, i);
            switch (c0.op) {
            case ncclSum: case ncclAvg: if (t == elem::f64) d = r ? d + v : v; else f = r ? f + (float)v : (float)v; break;
            case ncclProd: if (t == elem::f64) d = r ? d * v : v; else f = r ? f * (float)v : (float)v; break;
            case ncclMax: if (t == elem::f64) d = r && d > v ? d : v; else f = r && f > (float)v ? f : (float)v; break;
            default: if (t == elem::f64) d = r && d < v ? d : v; else f = r && f < (float)v ? f : (float)v; break;
            }
        }
        if (c0.op == ncclAvg) { if (t == elem::f64) d /= (double)ranks.size(); else f *= 1.0f / (float)ranks.size(); }
        acc[i] = t == elem::f64 ? d : f;
    }
    for (const call *c : ranks)
        for (size_t i = 0; i < n; i++) store(c->recv, t, i, acc[i]);
}

ncclResult_t submit(const call &c, const char *what) {
    ncclResult_t r = check(c, what);
    if (r != ncclSuccess) return r;
    if (depth > 0) { queued.push_back(c); return ncclSuccess; }
    if (c.comm->nranks > 1)
        return bad(ncclInvalidUsage, "%s outside ncclGroupStart/End on a communicator of %d ranks driven by one thread: NCCL "
                   "would wait here forever for the other ranks", what, c.comm->nranks);
    flush(stream_of(c.stream));
    run({ &c });
    return ncclSuccess;
}
}  // namespace

ncclResult_t ncclCommInitAll(ncclComm_t *out, int ndev, const int *devlist) {
    if (!out) return bad(ncclInvalidArgument, "ncclCommInitAll: comms is NULL");
    if (ndev < 1) return bad(ncclInvalidArgument, "ncclCommInitAll: ndev %d < 1", ndev);
    for (int k = 0; k < ndev; k++) {
        int d = devlist ? devlist[k] : k;
        if (d < 0 || d >= device_count()) return bad(ncclInvalidArgument, "ncclCommInitAll: no GPU %d (%d simulated)", d, device_count());
        for (int j = 0; j < k; j++)
            if ((devlist ? devlist[j] : j) == d) return bad(ncclInvalidUsage, "ncclCommInitAll: GPU %d listed twice", d);
    }
    int id = next_clique++;
    for (int k = 0; k < ndev; k++) {
        ncclComm *c = new ncclComm{ id, k, ndev, devlist ? devlist[k] : k };
        comms.insert(c);
        cliques[id].push_back(c);
        out[k] = c;
    }
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
    if (!c || !comms.count(c)) return bad(ncclInvalidArgument, "ncclCommDestroy: invalid or destroyed communicator");
    comms.erase(c);
    auto &v = cliques[c->clique];
    for (auto it = v.begin(); it != v.end(); ++it) if (*it == c) { v.erase(it); break; }
    delete c;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t c, int *n) {
    if (!c || !comms.count(c) || !n) return ncclInvalidArgument;
    *n = c->nranks;
    return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d) {
    if (!c || !comms.count(c) || !d) return ncclInvalidArgument;
    *d = c->device;
    return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r) {
    if (!c || !comms.count(c) || !r) return ncclInvalidArgument;
    *r = c->rank;
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
    return submit(call{ false, send, recv, count, type, op, 0, comm, stream }, "ncclAllReduce");
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    return submit(call{ true, send, recv, count, type, ncclSum, root, comm, stream }, "ncclBroadcast");
}

ncclResult_t ncclGroupStart(void) { depth++; return ncclSuccess; }

ncclResult_t ncclGroupEnd(void) {
    if (depth == 0) return bad(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--depth > 0) return ncclSuccess;
    std::vector<call> calls;
    calls.swap(queued);
    /* per communicator, its calls in order; the j-th calls of a clique's ranks form one collective */
    std::map<ncclComm *, std::vector<const call *>> by_comm;
    for (const call &c : calls) by_comm[c.comm].push_back(&c);
    std::set<int> seen;
    for (auto &kv : by_comm) {
        int id = kv.first->clique;
        if (!seen.insert(id).second) continue;
        const auto &members = cliques[id];
        size_t n_calls = kv.second.size();
        for (ncclComm *m : members) {
            if (!by_comm.count(m) || by_comm[m].size() != n_calls)
                return bad(ncclInvalidUsage, "ncclGroupEnd: rank %d of a communicator made %zu collective calls where another made %zu: "
                           "NCCL would hang", m->rank, by_comm.count(m) ? by_comm[m].size() : (size_t)0, n_calls);
        }
        for (size_t j = 0; j < n_calls; j++) {
            std::vector<const call *> ranks(members.size());
            for (ncclComm *m : members) ranks[m->rank] = by_comm[m][j];
            const call *a = ranks[0];
            for (const call *b : ranks)
                if (b->bcast != a->bcast || b->count != a->count || b->type != a->type || b->op != a->op || b->root != a->root)
                    return bad(ncclInvalidUsage, "ncclGroupEnd: collective %zu differs between ranks (kind, count, type, op or root): "
                               "NCCL would hang or corrupt", j);
            for (const call *b : ranks) flush(stream_of(b->stream));   /* the work before the collective */
            run(ranks);
        }
    }
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}
