/**
 * Imported first by the worker process. libuv's pool (4 threads unless told) also runs
 * getaddrinfo, and a lookup whose resolver does not answer holds a thread until the resolver
 * gives up: a few such names would leave none for the lookups of good receivers (and for fs,
 * zlib, crypto). The size is read when the pool is first used, so it is set here, before
 * anything else loads; UV_THREADPOOL_SIZE set by the operator wins.
 */
const WORKER_THREADPOOL_SIZE = 64;

process.env.UV_THREADPOOL_SIZE ||= String(WORKER_THREADPOOL_SIZE);
