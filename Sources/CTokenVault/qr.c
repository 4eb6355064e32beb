/* The glue between Swift and libqrencode (login --device draws the
 * verification URL): loaded on first use through the shared loader, so no
 * other command maps it. */
#include "tv_qr.h"
#include "loader.h"
#include <qrencode.h>
#include <stdlib.h>

#define TV_QR_FUNCS(X) X(QRcode_encodeString8bit) X(QRcode_free)

typedef struct {
#define TV_FIELD(name) __typeof__(&name) name;
    TV_QR_FUNCS(TV_FIELD)
#undef TV_FIELD
} tv_qr_api;

static tv_qr_api api;
static tv_dl_library library = TV_DL_LIBRARY_INIT;

static const tv_qr_api *tv_api(void) {
#define TV_NAME(name) #name,
#define TV_SLOT(name) (void **)&api.name,
    static const char *const names[] = { TV_QR_FUNCS(TV_NAME) };
    static void **const slots[] = { TV_QR_FUNCS(TV_SLOT) };
#undef TV_NAME
#undef TV_SLOT
    return tv_dl_load(&library, "libqrencode.so.4", names, slots, sizeof names / sizeof *names) ? &api : NULL;
}

int tv_qr_library_available(void) { return tv_api() != NULL; }

int tv_qr_encode(const char *text, unsigned char **modules, const char **message) {
    const tv_qr_api *qr = tv_api();
    if (qr == NULL) {
        *message = library.error;
        return 0;
    }
    QRcode *code = qr->QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M);
    if (code == NULL) {
        *message = "the text does not fit in a QR code";
        return 0;
    }
    int width = code->width;
    unsigned char *out = malloc((size_t)width * (size_t)width);
    if (out == NULL) {
        qr->QRcode_free(code);
        *message = "out of memory";
        return 0;
    }
    for (int i = 0; i < width * width; i++) out[i] = code->data[i] & 1;
    qr->QRcode_free(code);
    *modules = out;
    return width;
}

void tv_qr_free(unsigned char *modules) { free(modules); }
