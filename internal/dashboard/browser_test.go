package dashboard_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/emqd/emqd/internal/testsupport"
)

// The browser tests drive a real Chromium (Debian's chromium package)
// through chromedp: one headless browser for the whole package, a fresh
// browser context (its own cookies) per test. Without Chromium they skip,
// unless EMQD_REQUIRE_REFERENCE=1 (CI), where they fail. Each test saves
// full-page screenshots under artifactDir() and checks they are not blank.

var browser struct {
	once   sync.Once
	ctx    context.Context // the browser's chromedp context
	cancel func()
	err    error
	dir    string // its user-data-dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
		os.RemoveAll(browser.dir)
	}
	os.Exit(code)
}

// chromiumPath finds the browser binary.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// tab opens a new tab, in a browser context of its own, of the package's
// one browser (started on first use); it is closed when the test ends.
func tab(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		testsupport.Missing(t, "chromium not found: install the Debian package chromium")
	}
	browser.once.Do(func() {
		dir, err := os.MkdirTemp("", "emqd-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		browser.dir = dir
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.UserDataDir(dir),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-domain-reliability", true),
			chromedp.Flag("no-default-browser-check", true),
			chromedp.WindowSize(1280, 900),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(alloc)
		browser.ctx = ctx
		browser.cancel = func() { cancelCtx(); cancelAlloc() }
		// Start the browser with no timeout on this first run (a timeout
		// would stop the whole browser when it ends).
		browser.err = chromedp.Do(ctx)
	})
	if browser.err != nil {
		t.Fatalf("starting chromium: %v", browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	// Every step of a test gets at most this long (a hung page fails
	// instead of hanging the suite).
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelT)
	return ctx
}

// run runs the steps in the tab and fails the test on error.
func run(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// click clicks the element and waits for the page it leads to.
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("clicking %s: %v", sel, err)
	}
}

// artifactDir is where the screenshots go: $EMQD_ARTIFACTS/dashboard, or
// <os temp dir>/emqd-artifacts/dashboard (/tmp/emqd-artifacts/dashboard).
func artifactDir(t *testing.T) string {
	base := os.Getenv("EMQD_ARTIFACTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "emqd-artifacts")
	}
	dir := filepath.Join(base, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves a full-page PNG of the tab as name.png and fails the
// test when it is blank: it must have some size, at least 16 colours, and
// its commonest colour may cover at most 97% of the pixels.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifactDir(t), name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	colours, top, total := pixelStats(img)
	t.Logf("screenshot %s: %dx%d, %d colours, commonest %.1f%%", path, img.Bounds().Dx(), img.Bounds().Dy(),
		colours, 100*float64(top)/float64(total))
	if img.Bounds().Dx() < 200 || img.Bounds().Dy() < 200 || colours < 16 || float64(top) > 0.97*float64(total) {
		t.Fatalf("screenshot %s looks blank: %dx%d, %d colours, commonest colour on %d of %d pixels",
			path, img.Bounds().Dx(), img.Bounds().Dy(), colours, top, total)
	}
}

// pixelStats counts an image's distinct colours and the pixels of its
// commonest one.
func pixelStats(img image.Image) (colours, top, total int) {
	seen := map[uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			k := (r>>8)<<16 | (g>>8)<<8 | bl>>8
			seen[k]++
			total++
		}
	}
	for _, n := range seen {
		top = max(top, n)
	}
	return len(seen), top, total
}
