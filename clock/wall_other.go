//go:build !linux

package clock

import "time"

// wallMs is the wall clock in Unix milliseconds (wall_linux.go has the
// Linux form).
func wallMs() int64 { return time.Now().UnixMilli() }
