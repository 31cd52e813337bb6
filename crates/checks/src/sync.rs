//! Locks every thread of agentprof takes the same way.

/// The lock's value, also after a panic elsewhere poisoned it (the data stays consistent:
/// every holder finishes its step before unlocking).
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The lock's value, or None when a panic poisoned it: for state a panic can leave half
/// changed (a Python interpreter in the middle of a check), which is then not used again.
pub fn lock_unless_poisoned<T>(m: &std::sync::Mutex<T>) -> Option<std::sync::MutexGuard<'_, T>> {
    m.lock().ok()
}
