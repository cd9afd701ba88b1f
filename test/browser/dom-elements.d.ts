// React's types (the terminal's) declare the DOM's element interfaces as empty stubs for
// projects without the DOM library; what these tests read inside the page is declared here.
interface Element {
  readonly textContent: string | null;
  getAttribute(name: string): string | null;
}
