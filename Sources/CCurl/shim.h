/* Only for the compiler and linker flags of libcurl (pkg-config): the glue
 * that calls it is Sources/CTokenVault/http.c. */
#include <curl/curl.h>
