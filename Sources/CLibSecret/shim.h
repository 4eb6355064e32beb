/* Only for the compiler and linker flags of libsecret (pkg-config): the glue
 * that calls it is Sources/CTokenVault/secret.c. */
#include <libsecret/secret.h>
