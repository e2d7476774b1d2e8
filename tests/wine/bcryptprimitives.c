/*
 * A stand-in for Windows' bcryptprimitives.dll, for running Rust programs under Wine 8.
 *
 * Rust's std (1.78 and later) gets its random numbers (the keys of HashMap's RandomState)
 * from ProcessPrng in bcryptprimitives.dll, which Windows 10 and later ship and Wine 8.0
 * (Debian 12's) lacks, so every Rust program fails to start there
 * (https://github.com/rust-lang/rust/issues/128066). tests/wine/lib.sh builds this file
 * with mingw-w64 into the test Wine prefix's system32, where Windows keeps the real one.
 * It is test scaffolding only: it never ships with Tether.
 *
 * ProcessPrng(PBYTE pbData, SIZE_T cbData) -> BOOL fills cbData bytes (Microsoft documents
 * it as always returning TRUE). Here they come from RtlGenRandom (exported by advapi32 as
 * SystemFunction036), Wine's cryptographic generator, in chunks of at most ULONG_MAX bytes.
 */
#include <windows.h>

/* advapi32's RtlGenRandom (ntsecapi.h maps the name to SystemFunction036). */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0xFFFFFFFFu ? 0xFFFFFFFFu : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
