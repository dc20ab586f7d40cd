// A header menu (<details>) closes as menus do: on a press outside it and on Escape.
import { useEffect, type RefObject } from 'react'

export function useDismiss (menu: RefObject<HTMLDetailsElement | null>): void {
  useEffect(() => {
    const close = (): void => { if (menu.current !== null) menu.current.open = false }
    const onPress = (e: PointerEvent): void => {
      if (menu.current?.open === true && e.target instanceof Node && !menu.current.contains(e.target)) close()
    }
    const onKey = (e: KeyboardEvent): void => {
      if (e.key !== 'Escape' || menu.current?.open !== true) return
      close()
      menu.current.querySelector('summary')?.focus()
    }
    document.addEventListener('pointerdown', onPress)
    document.addEventListener('keydown', onKey)
    return () => {
      document.removeEventListener('pointerdown', onPress)
      document.removeEventListener('keydown', onKey)
    }
  }, [menu])
}
