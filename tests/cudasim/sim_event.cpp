/* CUDA events for cross-stream ordering (cudaEventRecord / cudaStreamWaitEvent): an event marks a
 * position in its stream's work; a stream that waits on it runs that stream's work up to there
 * before its own next item. Checks what CUDA rejects: an event recorded into a stream of another
 * GPU than the event's, a destroyed event or stream, recording or waiting during a capture (the
 * simulator does not capture events). */
#include <set>
#include "sim_internal.h"

using namespace cusim;

namespace {
std::set<CUevent_st *> events;

cudaError_t bad(cudaError_t e, const char *what) {
    fail("%s", what);
    set_error(e);
    return e;
}
}  // namespace

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
    if (!e || (flags & ~3u)) return cudaErrorInvalidValue;
    *e = new CUevent_st();
    (*e)->device = current_device();
    events.insert(*e);
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    if (!events.count(e)) return bad(cudaErrorInvalidResourceHandle, "cudaEventDestroy: not an event (destroyed twice?)");
    events.erase(e);
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (!events.count(e)) return bad(cudaErrorInvalidResourceHandle, "cudaEventRecord: not an event");
    CUstream_st *st = stream_of(s);
    if (!st) return bad(cudaErrorInvalidResourceHandle, "cudaEventRecord: not a stream");
    if (s && st->device != e->device)
        return bad(cudaErrorInvalidResourceHandle, "cudaEventRecord: the event belongs to another GPU than the stream");
    if (st->capturing) return bad(cudaErrorStreamCaptureUnsupported, "cudaEventRecord: the simulator does not capture events");
    e->stream = st;
    e->seq = st->enqueued;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (!events.count(e)) return bad(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: not an event");
    if (e->stream && stream_alive(e->stream)) flush_until(e->stream, e->seq);
    return cudaPeekAtLastError();
}

/* Waits on the event's latest record at the time of this call (later records do not move it). */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
    if (flags) return cudaErrorInvalidValue;
    if (!events.count(e)) return bad(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: not an event");
    CUstream_st *st = stream_of(s);
    if (!st) return bad(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: not a stream");
    if (st->capturing) return bad(cudaErrorStreamCaptureUnsupported, "cudaStreamWaitEvent: the simulator does not capture events");
    if (!e->stream) return cudaSuccess;
    CUstream_st *src = e->stream;
    uint64_t seq = e->seq;
    return enqueue(s, [src, seq] { if (stream_alive(src)) flush_until(src, seq); });
}
