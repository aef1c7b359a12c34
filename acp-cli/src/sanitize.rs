//! Making text from the agent safe to print on a terminal.
//!
//! An agent is a program we did not write, and its text goes to the user's terminal. Escape
//! sequences there can move the cursor (and so overwrite what the user saw), retitle the
//! window, write the clipboard (OSC 52), or draw fake prompts; a bare carriage return can
//! overwrite the start of a line. [`terminal_safe`] keeps printable text, newlines and tabs
//! and drops everything else: every escape sequence whole (CSI, OSC, DCS and the like, up to
//! their terminator), the other C0 and C1 control characters, and the bidirectional overrides
//! that can make text read differently from what it is. Forged transcript lines are handled
//! by the renderer, which starts every line of agent text with a gutter the UI's own lines
//! never have.

/// The text with escape sequences and control characters removed; newlines and tabs stay.
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => skip_escape(&mut chars),
            // C1 introducers for the string-carrying sequences (DCS, SOS, OSC, PM, APC).
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            // CSI as a single C1 character.
            '\u{9b}' => skip_csi(&mut chars),
            c if is_dangerous(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Control characters and invisible formatting characters that change how text reads.
fn is_dangerous(c: char) -> bool {
    c.is_control()
        || matches!(c,
            // Bidirectional embeddings, overrides and isolates.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
        )
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// Skips the rest of an escape sequence whose ESC has been read.
fn skip_escape(chars: &mut Chars<'_>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        // OSC, DCS, SOS, PM, APC: a string up to ST (ESC \) or BEL.
        Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars),
        // nF sequences: intermediates (0x20..=0x2f) then one final byte.
        Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
            while let Some(&n) = chars.peek() {
                chars.next();
                if !('\u{20}'..='\u{2f}').contains(&n) {
                    break;
                }
            }
        }
        // Two-character sequences (ESC 7, ESC c, ...): the one character is dropped too.
        _ => {}
    }
}

/// Skips a CSI sequence's parameters, intermediates and final byte.
fn skip_csi(chars: &mut Chars<'_>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
        // Anything outside the CSI alphabet ends it (and is dropped with it).
        if !('\u{20}'..='\u{3f}').contains(&c) {
            break;
        }
    }
}

/// Skips a control string up to its terminator (ST as ESC \ or U+009C, or BEL).
fn skip_string(chars: &mut Chars<'_>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::terminal_safe;

    #[test]
    fn plain_text_newlines_and_tabs_stay() {
        assert_eq!(terminal_safe("héllo\n\tworld ✓"), "héllo\n\tworld ✓");
    }

    #[test]
    fn cursor_moves_and_colours_are_dropped() {
        assert_eq!(terminal_safe("a\x1b[2J\x1b[1;1Hb\x1b[31mc\x1b[0m"), "abc");
        assert_eq!(terminal_safe("x\u{9b}2Ay"), "xy");
    }

    #[test]
    fn titles_and_clipboard_writes_are_dropped_whole() {
        assert_eq!(terminal_safe("a\x1b]0;pwned\x07b"), "ab");
        assert_eq!(terminal_safe("a\x1b]52;c;ZWNobyBoaQ==\x1b\\b"), "ab");
        assert_eq!(terminal_safe("a\u{9d}2;t\u{9c}b"), "ab");
        assert_eq!(terminal_safe("a\x1bP1$r\x1b\\b"), "ab");
    }

    #[test]
    fn carriage_returns_backspaces_and_bells_are_dropped() {
        assert_eq!(terminal_safe("safe\rEVIL\x08\x08\x07"), "safeEVIL");
    }

    #[test]
    fn bidi_overrides_are_dropped() {
        assert_eq!(terminal_safe("a\u{202e}cba\u{2066}"), "acba");
    }

    #[test]
    fn an_unterminated_sequence_swallows_only_itself() {
        assert_eq!(terminal_safe("ok\x1b]0;never ends"), "ok");
        assert_eq!(terminal_safe("ok\x1b"), "ok");
        assert_eq!(terminal_safe("ok\x1b[12"), "ok");
    }
}
