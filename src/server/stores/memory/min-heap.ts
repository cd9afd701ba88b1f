/** A binary min-heap ordered by `before(a, b)`. */
export class MinHeap<T> {
  readonly #items: T[] = [];
  readonly #before: (a: T, b: T) => boolean;

  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const items = this.#items;
    items.push(item);
    let index = items.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.#before(items[index]!, items[parent]!)) break;
      [items[index], items[parent]] = [items[parent]!, items[index]!];
      index = parent;
    }
  }

  pop(): T | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      const right = left + 1;
      let smallest = index;
      if (left < items.length && this.#before(items[left]!, items[smallest]!)) smallest = left;
      if (right < items.length && this.#before(items[right]!, items[smallest]!)) smallest = right;
      if (smallest === index) break;
      [items[index], items[smallest]] = [items[smallest]!, items[index]!];
      index = smallest;
    }
    return top;
  }

  clear(): void {
    this.#items.length = 0;
  }
}
