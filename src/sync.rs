//! Locks every thread of agentprof takes the same way.

/// The lock's value, also after a panic elsewhere poisoned it (the data stays consistent:
/// every holder finishes its step before unlocking).
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
