/* The Secret Service through libsecret, loaded on first use. Messages set
 * through `message` are freed with tv_free, secrets with tv_password_free. */
#ifndef TV_SECRET_H
#define TV_SECRET_H

/* One found item: its service and account, the secret (NULL when not loaded),
   and whether it is tokenvault's own (its schema and one of its types). */
typedef void (*tv_item_callback)(void *context, const char *service, const char *account, const char *secret,
                                 int ours);
/* One copy of an item: its D-Bus path and its secret. */
typedef void (*tv_copy_callback)(void *context, const char *path, const char *secret);

/* 1 when libsecret-1.so.0 can be loaded. */
int tv_secret_library_available(void);
void tv_free(void *p);
void tv_password_free(char *p);
/* Makes libsecret's shared backend ready: loaded, connected, its session
   open, so that the lookup, store or search that follows (from any thread)
   does only its own round trips. Blocks; 1: ready, 0: not (the call that
   follows reports why). */
int tv_secret_prepare(void);
/* Connects and opens a session: the probe. 1: ok, 0: failed (*message). */
int tv_service_open(char **message);
/* -1: unknown, 0: unlocked, 1: locked. */
int tv_default_collection_locked(void);
/* The same, and *label (tv_free) when label is not NULL and the state is known. */
int tv_default_collection_state(char **label);
/* Unlocks the default collection through the keyring's own prompt, waiting
   for its answer. 1: unlocked, 0: dismissed, -1: failed (*message). */
int tv_unlock_default_collection(char **message);
/* The default collection unlocked where no one is asked: 1 unlocked, 0 it needs its user, -1 no answer. */
int tv_unlock_quietly(void);
/* The process id owning org.freedesktop.secrets on the session bus, or 0. */
unsigned int tv_secrets_owner_pid(int timeout_ms);
/* The secret for service+account, or NULL (*message set on failure, NULL when
   absent): tokenvault's own item, or with foreign_too, where it has none, an
   item of another schema (*foreign then 1). libsecret may unlock to answer. */
char *tv_lookup(const char *service, const char *account, int foreign_too, int *foreign, char **message);
/* The same in D-Bus calls of its own: one when `known` still names the item;
   *found (tv_free) is the item's path. NULL and no message: ask tv_lookup. */
char *tv_lookup_item(const char *service, const char *account, const char *known, char **found, char **message);
/* The message of a call that D-Bus stopped waiting for (its own 25 s
   default): the provider may still hold it, behind a dialog. */
#define TV_SECRET_NO_ANSWER "no answer within D-Bus's own time limit"
/* The message of a read whose secret came encrypted for another session key
   than libsecret's (kwalletd5 now and then derives one): the call is made
   again on a new session. */
#define TV_SECRET_UNDECODABLE "the Secret Service sent a secret this session could not decrypt"

/* After a failed call: 1 when the Secret Service's owner on the bus changed
   (a keyring restarted), and libsecret's shared service, session and
   connection were dropped so that the next call opens new ones; else 0.
   `always`: dropped whatever the owner (a session the provider refused). */
int tv_secret_reconnect(int always);
/* 1: a process owns org.freedesktop.secrets on the session bus; 0: none; -1: the bus does not say. */
int tv_secret_owned(void);
/* Every unlocked item of tokenvault's for service+account in any collection,
   read in one GetSecrets: callback(context, path, secret) each; where it has
   none, unlocked or locked, the items of other schemas (*foreign then 1). How
   many; -1 (*message) on failure; 0 when none is unlocked. *locked: how many
   matched locked. */
int tv_lookup_copies(const char *service, const char *account, void *context, tv_copy_callback callback,
                     int *locked, int *foreign, char **message);
/* After a write to the default collection, deletes tokenvault's unlocked items
   for service+account (of each of `types`, NULL-terminated) in the others
   (never one that would prompt): how many; -1 (*message) on failure. */
int tv_prune_copies(const char *service, const char *account, const char *const *types, char **message);
/* How many items for service+account, locked or not, are not tokenvault's
   (another schema, or a type not in `types`); *schema (tv_free, may be NULL)
   names the first one's xdg:schema ("" when it has none). -1 (*message) on failure. */
int tv_foreign_items(const char *service, const char *account, const char *const *types, char **schema,
                     char **message);
/* Stores a NUL-terminated secret, then removes items of `other_types` (NULL-terminated). 1: ok. */
int tv_store(const char *service, const char *account, const char *type, const char *const *other_types,
             const char *label, const char *secret, char **message);
/* Deletes tokenvault's items for service+account (of each of `types`,
   NULL-terminated), never another schema's. 1: some deleted, 0: none, -1: failed. */
int tv_clear(const char *service, const char *account, const char *const *types, char **message);
/* The secret of another application's item (tv_password_free) with these
   attributes (`attributes`: name, value, name, value, …, NULL), as that
   application wrote it, in any collection; libsecret may unlock to answer.
   NULL with *message NULL when there is none. Read only: tokenvault never
   changes or deletes another application's item. */
char *tv_lookup_other(const char *const *attributes, char **message);
/* Calls back for every item of `type`, anyone's, saying whether it is
   tokenvault's (`types`: its types); loads (and unlocks) secrets only with
   load_secrets. 1: ok. */
int tv_search(const char *type, const char *const *types, int load_secrets, void *context, tv_item_callback callback,
              char **message);

#endif
