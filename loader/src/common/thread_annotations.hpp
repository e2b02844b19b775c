#pragma once
// Clang's thread-safety attributes (-Wthread-safety), as LevelDB's port/thread_annotations.h
// spells them. Other compilers see nothing. The clang build in .ci/run compiles the loader with
// -Wthread-safety -Werror, so a member read without its lock is a build failure, not a comment
// that went stale.

#if defined(__clang__)
#define STOKE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define STOKE_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) STOKE_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY STOKE_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) STOKE_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) STOKE_THREAD_ANNOTATION(pt_guarded_by(x))
// Lock orders: clang checks them with -Wthread-safety-beta (acquired_before/after); the
// thread-safety preset turns that on.
#define ACQUIRED_BEFORE(...) STOKE_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) STOKE_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) STOKE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) STOKE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) STOKE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) STOKE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RETURN_CAPABILITY(x) STOKE_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS STOKE_THREAD_ANNOTATION(no_thread_safety_analysis)
