package server

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/emqd/emqd/internal/num"
	"github.com/emqd/emqd/internal/store"
)

// valkeyVersion is the Valkey release whose behaviour emqd matches: HELLO's
// version, LOLWUT's line, dump.rdb's valkey-ver (docs/compat.md §4).
const valkeyVersion = "8.0.1"

// cmdLolwut is LOLWUT [VERSION <n> [args ...]], as Valkey 8.0.1's
// lolwutCommand: VERSION must be an integer (and the arguments VERSION 5
// and 6 take: Valkey's integer error for one that is not), and the reply
// is the verbatim line "Redis ver. 8.0.1\n", Valkey 8.0.1's own text;
// VERSION 5 draws Schotter (lolwut5), VERSION 6 a skyline (lolwut6).
func cmdLolwut(c *client, x *store.Ctx) {
	argv := x.Argv
	if len(argv) >= 3 && strings.EqualFold(string(argv[1]), "version") {
		ver, ok := num.ParseInt(argv[2])
		if !ok {
			x.W.Error(store.ErrNotInteger)
			return
		}
		v := strconv.FormatUint(uint64(uint32(ver)), 10) + ".0.0"
		if v[1] == '.' && (v[0] == '5' || v[0] == '6') {
			// lolwut5Command reads up to three integer arguments,
			// lolwut6Command up to two, before drawing.
			n := 3
			if v[0] == '6' {
				n = 2
			}
			args := []int64{66, 8, 12}
			if v[0] == '6' {
				args = []int64{80, 20}
			}
			for i, a := range argv[3:min(len(argv), 3+n)] {
				n, ok := num.ParseInt(a)
				if !ok {
					x.W.Error(store.ErrNotInteger)
					return
				}
				args[i] = n
			}
			if v[0] == '5' {
				x.W.Verbatim(lolwut5(args[0], args[1], args[2]))
			} else {
				x.W.Verbatim(lolwut6(args[0], args[1]))
			}
			return
		}
	}
	x.W.Verbatim("Redis ver. " + valkeyVersion + "\n")
}

// lolwut5 is LOLWUT VERSION 5, as Valkey 8.0.1's lolwut5Command: Georg
// Nees' "Schotter" drawn in braille characters (each 2x4 pixels) on a
// canvas cols*2 pixels wide (cols 1..1000, default 66) of perRow x perCol
// squares (1..200, defaults 8 and 12); from the third row down each square
// is turned and moved by a random amount growing with the row, so only the
// first two rows are the same at every call (and the same as Valkey's).
func lolwut5(cols, perRow, perCol int64) string {
	cols, perRow, perCol = max(1, min(cols, 1000)), max(1, min(perRow, 200)), max(1, min(perCol, 200))
	width := int(cols) * 2
	pad := 0
	if width > 4 {
		pad = 2
	}
	side := float32(width-pad*2) / float32(perRow)
	height := int(side*float32(perCol) + float32(pad*2))
	cv := &canvas{w: width, h: height, px: make([]bool, width*height)}
	for y := 0; y < int(perCol); y++ {
		for x := 0; x < int(perRow); x++ {
			sx := int(float32(x)*side + side/2 + float32(pad))
			sy := int(float32(y)*side + side/2 + float32(pad))
			var angle float32
			if y > 1 {
				r := func() float32 {
					v := rand.Float32() / float32(perCol) * float32(y)
					if rand.IntN(2) == 1 {
						v = -v
					}
					return v
				}
				r1, r2, r3 := r(), r(), r()
				angle = r1
				sx += int(r2 * side / 3)
				sy += int(r3 * side / 3)
			}
			cv.square(sx, sy, side, angle)
		}
	}
	var b strings.Builder
	for y := 0; y < height; y += 4 {
		for x := 0; x < width; x += 2 {
			bits := 0
			for i, p := range [8][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {0, 3}, {1, 3}} {
				if cv.get(x+p[0], y+p[1]) {
					bits |= 1 << i
				}
			}
			b.WriteRune(rune(0x2800 + bits))
		}
		if y != height-1 {
			b.WriteByte('\n')
		}
	}
	b.WriteString("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. " + valkeyVersion + "\n")
	return b.String()
}

// canvas is a monochrome pixel canvas.
type canvas struct {
	w, h int
	px   []bool
}

func (c *canvas) set(x, y int) {
	if x >= 0 && x < c.w && y >= 0 && y < c.h {
		c.px[x+y*c.w] = true
	}
}

func (c *canvas) get(x, y int) bool {
	return x >= 0 && x < c.w && y >= 0 && y < c.h && c.px[x+y*c.w]
}

// line draws from (x1, y1) to (x2, y2), Bresenham's way.
func (c *canvas) line(x1, y1, x2, y2 int) {
	dx, dy := abs(x2-x1), abs(y2-y1)
	sx, sy := 1, 1
	if x1 >= x2 {
		sx = -1
	}
	if y1 >= y2 {
		sy = -1
	}
	err := dx - dy
	for {
		c.set(x1, y1)
		if x1 == x2 && y1 == y2 {
			return
		}
		e2 := err * 2
		if e2 > -dy {
			err -= dy
			x1 += sx
		}
		if e2 < dx {
			err += dx
			y1 += sy
		}
	}
}

// square draws a square of the given side centred at (x, y), turned by
// angle (radians): its corners on the circle through them, in single
// precision as Valkey computes them.
func (c *canvas) square(x, y int, side, angle float32) {
	size := float32(math.Round(float64(float32(float64(side) / 1.4142135623))))
	k := float32(math.Pi/4 + float64(angle))
	var px, py [4]int
	for j := range 4 {
		px[j] = int(math.Round(math.Sin(float64(k))*float64(size) + float64(x)))
		py[j] = int(math.Round(math.Cos(float64(k))*float64(size) + float64(y)))
		k = float32(float64(k) + math.Pi/2)
	}
	for j := range 4 {
		c.line(px[j], py[j], px[(j+1)%4], py[(j+1)%4])
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// lolwut6 is LOLWUT VERSION 6, as Valkey 8.0.1's lolwut6Command: a city
// skyline in the four grays of a color terminal (each pixel one space with
// its color escape), cols x rows pixels (1..1000, defaults 80 and 20): two
// passes of background skyscrapers, then the foreground ones with windows,
// all of random offsets, widths and heights (one pixel row is always the
// white sky alone, as in Valkey).
func lolwut6(cols, rows int64) string {
	w, h := int(max(1, min(cols, 1000))), int(max(1, min(rows, 1000)))
	px := make([]int, w*h)
	for i := range px {
		px[i] = 3
	}
	get := func(x, y int) int {
		if x < 0 || x >= w || y < 0 || y >= h {
			return 0
		}
		return px[x+y*w]
	}
	sky := func(xoff, width, height int, windows bool, color int) {
		starty := h - 1
		endy := starty - height + 1
		for y := starty; y >= endy; y-- {
			for x := xoff; x < xoff+width; x++ {
				if y == endy && (x <= xoff+1 || x >= xoff+width-2) {
					continue // the roof is four pixels narrower
				}
				c := color
				if windows && x > xoff+1 && x < xoff+width-2 && y > endy+1 && y < starty-1 {
					relx, rely := x-(xoff+1), y-(endy+1)
					if relx/2%2 != 0 && rely%2 != 0 {
						for c = 1 + rand.IntN(2); c == color; c = 1 + rand.IntN(2) {
						}
						if relx%2 != 0 {
							c = get(x-1, y) // one window is two pixels wide
						}
					}
				}
				if x >= 0 && x < w && y >= 0 && y < h {
					px[x+y*w] = c
				}
			}
		}
	}
	for color := 2; color >= 1; color-- {
		for off := -10; off < w; {
			off += rand.IntN(8)
			width := 10 + rand.IntN(9)
			height := h/2 + rand.IntN(h)/2
			if color == 1 {
				height = h/2 + rand.IntN(h)/3
			}
			sky(off, width, height, false, color)
			if color == 2 {
				off += width / 2
			} else {
				off += width + 1
			}
		}
	}
	for off := -10; off < w; {
		off += rand.IntN(8)
		width := 5 + rand.IntN(14)
		if width%4 != 0 {
			width += width % 3
		}
		height := h/3 + rand.IntN(h)/2
		sky(off, width, height, true, 0)
		off += width + 5
	}
	esc := [4]string{"0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m"}
	var b strings.Builder
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			b.WriteString("\x1b[" + esc[px[x+y*w]] + " \x1b[0m")
		}
		if y != h-1 {
			b.WriteByte('\n')
		}
	}
	b.WriteString("\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. " + valkeyVersion + "\n")
	return b.String()
}
