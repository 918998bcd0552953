#ifndef COURIER_CCRYPTO_SHIM_H
#define COURIER_CCRYPTO_SHIM_H

// OpenSSL's libcrypto, for the HMAC-SHA256 of signed webhooks (Debian: libssl-dev).
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stddef.h>
#include <stdint.h>

/// HMAC-SHA256 of `data` under `key` into `out` (32 bytes). Returns 1 on success, 0 on failure.
/// A shim so Swift need not handle EVP_sha256()'s const pointer or HMAC()'s output length.
static inline int courier_hmac_sha256(const uint8_t *key, size_t key_length,
                                      const uint8_t *data, size_t data_length,
                                      uint8_t out[32]) {
    unsigned int length = 0;
    if (HMAC(EVP_sha256(), key, (int)key_length, data, data_length, out, &length) == NULL) return 0;
    return length == 32;
}

#endif
